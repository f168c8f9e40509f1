//! Recorded refusals against the real `hookd` binary: once a refused
//! request was answered, its record survives SIGKILL.

use hookd_sdk::client::{proto::ListRejectionsRequest, HookdClient};
use reqwest::StatusCode;

use crate::{
    harness::{now_secs, ACME, ADMIN_TOKEN},
    process::HookdProcess,
};

/// Refused requests answered before the kill.
const REFUSED: usize = 20;

#[tokio::test]
async fn an_answered_refusal_is_still_recorded_after_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("hookd.toml");
    std::fs::write(&config, ACME).unwrap();
    let data = dir.path().join("data");
    let env = [("HOOKD_ADMIN_TOKEN", ADMIN_TOKEN)];
    let mut answered = Vec::new();
    {
        let mut hookd = HookdProcess::spawn(&data, &config, &env);
        for i in 0..REFUSED {
            let (status, answer) = hookd
                .post(&format!("msg_{i}"), now_secs(), b"{not json")
                .await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
            answered.push(answer["request_id"].as_str().unwrap().to_owned());
        }
        hookd.child.kill().unwrap();
        hookd.child.wait().unwrap();
    }
    let hookd = HookdProcess::spawn(&data, &config, &env);
    let admin = HookdClient::connect(hookd.grpc.clone(), ADMIN_TOKEN)
        .await
        .unwrap();
    let listed = admin
        .list_rejections(ListRejectionsRequest {
            tenant_id: "acme".into(),
            page_size: 100,
            ..Default::default()
        })
        .await
        .unwrap();
    let kept: std::collections::HashSet<&str> = listed
        .rejections
        .iter()
        .map(|r| r.request_id.as_str())
        .collect();
    let lost: Vec<&String> = answered
        .iter()
        .filter(|id| !kept.contains(id.as_str()))
        .collect();
    assert!(
        lost.is_empty(),
        "{} of {REFUSED} answered refusals lost to SIGKILL: {lost:?}",
        lost.len()
    );
}
