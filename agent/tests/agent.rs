//! The agent through the real engine (the embedded server's code paths, no socket): what a client
//! sees when it talks to this agent. Edit these with the agent.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use a2a::card::parse_card_file;
use a2a::embedded::{start, Embedded, EmbeddedConfig};
use a2a::executor::AgentChoice;
use serde_json::{json, Value};

async fn serve() -> Embedded {
    start(EmbeddedConfig {
        card: parse_card_file(agent::CARD).expect("agent/card.json is a valid card"),
        ..EmbeddedConfig::new("http://agent.test", agent::executor(AgentChoice::Own).await.unwrap())
    })
    .await
    .unwrap()
}

async fn send(agent: &Embedded, text: &str, task_id: Option<&str>) -> Value {
    let mut message = json!({"messageId": uuid(), "role": "ROLE_USER", "parts": [{"text": text}]});
    if let Some(id) = task_id {
        message["taskId"] = json!(id);
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}});
    let req = http::Request::post("/")
        .header("content-type", "application/json")
        .header("A2A-Version", "1.0")
        .body(bytes::Bytes::from(body.to_string()))
        .unwrap();
    let resp = agent.service.handle(req).await;
    serde_json::from_slice::<Value>(&resp.into_body().bytes()).unwrap()["result"]["task"].clone()
}

fn uuid() -> String {
    format!("m-{}", std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos())
}

#[tokio::test]
async fn answers_word_by_word_in_one_artifact() {
    let agent = serve().await;
    let task = send(&agent, "hello there", None).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
    let parts = task["artifacts"][0]["parts"].as_array().unwrap();
    let text: String = parts.iter().map(|p| p["text"].as_str().unwrap()).collect();
    assert_eq!(text, "You said: hello there");
}

#[tokio::test]
async fn asks_back_when_sent_nothing() {
    let agent = serve().await;
    let task = send(&agent, " ", None).await;
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{task}");
    let id = task["id"].as_str().unwrap();
    let next = send(&agent, "now this", Some(id)).await;
    assert_eq!(next["status"]["state"], "TASK_STATE_COMPLETED", "{next}");
}

#[test]
fn the_card_is_valid() {
    let card = parse_card_file(agent::CARD).unwrap();
    assert!(!card.name.is_empty() && !card.skills.is_empty());
}
