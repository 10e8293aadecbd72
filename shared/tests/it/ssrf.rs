//! The SSRF matrix: webhook URLs that reach special-purpose addresses in disguise (a trailing dot,
//! hex, octal and decimal IPv4, IPv4-mapped, -translated and -compatible, NAT64, 6to4 and Teredo
//! IPv6, IPv6 outside global unicast, metadata and benchmarking ranges,
//! `localhost.`), and names that do not resolve, are refused at registration on both bindings and
//! as inline configs (leaving no task behind), and at delivery a receiver on loopback gets nothing
//! unless loopback is allow-listed — in which case the disguised form reaches it like the plain one,
//! because registration, delivery and the HTTP client read URLs with one parser.

use crate::harness;

use std::time::Duration;

use a2a::ports::{EventRecord, PushJob};
use a2a::push::{Deliverer, Outcome};
use a2a::ssrf::AllowList;
use a2a::types::{StreamResponse, TaskPushNotificationConfig, TaskState, TaskStatus, TaskStatusUpdateEvent};
use harness::*;
use serde_json::{json, Value};

const DISGUISED: &[&str] = &[
    "http://127.0.0.1.:9/hook",
    "http://0x7f.0.0.1/hook",
    "http://0177.0.0.1/hook",
    "http://2130706433/hook",
    "http://127.1/hook",
    "http://[::1]/hook",
    "http://[::ffff:127.0.0.1]/hook",
    "http://[64:ff9b::7f00:1]/hook",
    "http://[2002:7f00:1::]/hook",
    "http://[::ffff:0:7f00:1]/hook",
    "http://[::7f00:1]/hook",
    "http://[64:ff9b::a9fe:a9fe]/latest",
    "http://[2002:c0a8:101::1]/hook",
    "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/hook",
    "http://[2001:db8::1]/hook",
    "http://[fe80::1]/hook",
    "http://[ff02::1]/hook",
    "http://[100::1]/hook",
    "http://[4000::1]/hook",
    "http://169.254.169.254./latest/meta-data",
    "http://[fd00:ec2::254]/latest",
    "http://198.18.0.1/hook",
    "http://100.64.0.1/hook",
    "http://localhost./hook",
    "http://no-such-host.invalid/hook",
];

fn field(v: &Value) -> String {
    v["data"][0]["metadata"]["field"]
        .as_str()
        .or_else(|| v["error"]["details"][0]["metadata"]["field"].as_str())
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn disguised_and_unresolvable_webhooks_are_refused_at_registration() {
    let a = agent().await;
    let made = a.rpc("SendMessage", json!({"message": msg("tck-input-required-ssrf", "x")})).await;
    let task_id = made["result"]["task"]["id"].as_str().unwrap().to_string();
    for url in DISGUISED {
        let v = a.rpc("CreateTaskPushNotificationConfig", json!({"taskId": task_id, "url": url})).await;
        assert_eq!(v["error"]["code"], -32602, "{url}: {v}");
        assert_eq!(field(&v["error"]), "url", "{url}: {v}");

        let r = a.rest("POST", &format!("/tasks/{task_id}/pushNotificationConfigs"), Some(json!({"url": url}))).await;
        assert_eq!(r.status, 400, "{url}: {}", r.body);
        assert_eq!(field(&r.body), "url", "{url}");

        // Inline, with a new task: refused before anything is stored.
        let before = a.rpc("ListTasks", json!({})).await["result"]["totalSize"].clone();
        let inline = json!({"message": msg(&format!("ssrf-inline-{url}"), "x"),
            "configuration": {"taskPushNotificationConfig": {"url": url}}});
        let v = a.rpc("SendMessage", inline.clone()).await;
        assert_eq!(field(&v["error"]), "configuration.taskPushNotificationConfig.url", "{url}: {v}");
        let r = a.rest("POST", "/message:send", Some(inline)).await;
        assert_eq!(r.status, 400, "{url}");
        assert_eq!(a.rpc("ListTasks", json!({})).await["result"]["totalSize"], before, "{url}: no task left behind");
    }
    let v = a.rpc("ListTaskPushNotificationConfigs", json!({"taskId": task_id})).await;
    assert_eq!(v["result"]["configs"], json!([]));
}

fn job(url: String) -> PushJob {
    let status = TaskStatus { state: TaskState::Working, message: None, timestamp: None };
    let event = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: "t".into(),
        context_id: "c".into(),
        status,
        metadata: None,
    });
    PushJob {
        config: TaskPushNotificationConfig { task_id: "t".into(), id: "c".into(), url, ..Default::default() },
        event: EventRecord { seq: 1, event },
        attempt: 1,
        trace: None,
    }
}

#[tokio::test]
async fn delivery_refuses_what_registration_refuses_with_the_same_reading() {
    let (url, hits) = recording_server(|_| ("application/json", String::new())).await;
    let port = url.trim_end_matches('/').rsplit(':').next().unwrap().parse::<u16>().unwrap();
    let guarded = Deliverer::new(AllowList::default(), Duration::from_secs(2)).unwrap();
    let forms = [
        "127.0.0.1.",
        "0x7f.0.0.1",
        "2130706433",
        "[::ffff:127.0.0.1]",
        "[::ffff:0:7f00:1]",
        "localhost",
        "localhost.",
    ];
    for form in forms {
        let url = format!("http://{form}:{port}/hook");
        let outcome = guarded.deliver(&job(url.clone())).await;
        assert!(matches!(outcome, Outcome::Refused(_)), "{url}: {outcome:?}");
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(hits.lock().is_empty(), "nothing reached the receiver: {:?}", hits.lock());

    // Allow-listed, the disguised form is the same address, and arrives.
    let open = Deliverer::new(AllowList::parse("127.0.0.1/32").unwrap(), Duration::from_secs(2)).unwrap();
    for form in ["127.0.0.1.", "0x7f.0.0.1", "127.1"] {
        let outcome = open.deliver(&job(format!("http://{form}:{port}/hook"))).await;
        assert_eq!(outcome, Outcome::Delivered(200), "{form}");
    }
    assert_eq!(hits.lock().len(), 3);
}

#[tokio::test]
async fn a_trusted_name_registers_without_resolving_and_is_still_checked_at_delivery() {
    use a2a::push::DnsPolicy;
    use a2a::webhook::WebhookPolicy;
    let url = "http://no-such-host.invalid/hook";
    let strict = DnsPolicy { allow: AllowList::default() };
    let err = strict.check(url).await.unwrap_err();
    assert!(err.message.contains("does not resolve"), "{}", err.message);
    let trusting = DnsPolicy { allow: AllowList::parse("No-Such-Host.invalid.").unwrap() };
    trusting.check(url).await.unwrap();
    // Trusting a name opens no address: the disguised loopback forms stay refused.
    for bad in ["http://127.0.0.1.:9/hook", "http://localhost./hook"] {
        assert!(trusting.check(bad).await.is_err(), "{bad}");
    }
    let deliverer = Deliverer::new(AllowList::parse("no-such-host.invalid").unwrap(), Duration::from_secs(2)).unwrap();
    let outcome = deliverer.deliver(&job(url.into())).await;
    assert!(matches!(outcome, Outcome::Failed(_)), "{outcome:?}");
}
