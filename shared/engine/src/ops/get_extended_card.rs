//! GetExtendedAgentCard: JSON-RPC `GetExtendedAgentCard` (0.3 `agent/getAuthenticatedExtendedCard`),
//! `GET /extendedAgentCard`, spec §3.1.11. Requires an authenticated principal, unless the
//! deployment asks for no credentials at all (then the card declares no scheme to authenticate with,
//! and the extended card is served to everyone: it is advertised only where it can be had).

use crate::engine::{CallContext, Engine};
use a2a_protocol::error::{A2aError, ErrorKind, Result};
use a2a_protocol::types::AgentCard;

pub fn get_extended_card(engine: &Engine, ctx: &CallContext) -> Result<AgentCard> {
    if engine.card.card.capabilities.extended_agent_card != Some(true) {
        return Err(A2aError::unsupported(
            "this agent has no extended agent card (capabilities.extendedAgentCard is false)",
        ));
    }
    if !ctx.principal.authenticated && !engine.auth.is_open() {
        return Err(A2aError::unauthenticated(
            "the extended agent card requires authentication with a scheme the card declares",
        ));
    }
    engine.card.extended().cloned().ok_or_else(|| {
        A2aError::new(
            ErrorKind::ExtendedAgentCardNotConfigured,
            "the agent declares an extended card but none is configured",
        )
    })
}
