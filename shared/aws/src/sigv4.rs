//! AWS Signature Version 4 for outgoing calls (feature `aws`): the headers that sign one request
//! with the process's AWS credentials — an agent behind a Lambda Function URL with `AWS_IAM` auth
//! (the HTTP agent), or an A2A agent on Bedrock AgentCore (the client, and so the gateway).

use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SigningSettings};
use aws_sigv4::sign::v4;
use sha2::{Digest, Sha256};

/// What to sign for: the region and the service name (`lambda`, `bedrock-agentcore`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    pub region: String,
    pub service: String,
}

/// The process's AWS credentials provider (the SDK's default chain).
pub async fn default_credentials() -> Option<SharedCredentialsProvider> {
    crate::sdk_config().await.credentials_provider()
}

/// The headers to add (`x-amz-content-sha256`, `x-amz-date`, `authorization`, and
/// `x-amz-security-token` with temporary credentials) to a request of `method` to `url` with
/// `headers` (those to sign) and `body`.
pub async fn headers(
    provider: &SharedCredentialsProvider,
    scope: &Scope,
    method: &str,
    url: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> Result<Vec<(String, String)>, String> {
    let credentials =
        provider.provide_credentials().await.map_err(|e| format!("no AWS credentials to sign with: {e}"))?;
    let identity = credentials.into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(&scope.region)
        .name(&scope.service)
        .time(std::time::SystemTime::now())
        .settings(SigningSettings::default())
        .build()
        .map_err(|e| format!("signing: {e}"))?
        .into();
    let hash: String = Sha256::digest(body).iter().map(|b| format!("{b:02x}")).collect();
    let mut all: Vec<(String, String)> = headers.to_vec();
    all.push(("x-amz-content-sha256".into(), hash.clone()));
    let signable = SignableRequest::new(
        method,
        url,
        all.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        SignableBody::Precomputed(hash.clone()),
    )
    .map_err(|e| format!("signing: {e}"))?;
    let (instructions, _) = sign(signable, &params).map_err(|e| format!("signing: {e}"))?.into_parts();
    let mut out = vec![("x-amz-content-sha256".to_string(), hash)];
    out.extend(instructions.headers().map(|(k, v)| (k.to_string(), v.to_string())));
    Ok(out)
}
