//! `scheme = "hmac"` over the control plane: a tenant created with a spec
//! verifies what a sender signs with it, shows its spec back, takes a new
//! one on update, and a bad spec is INVALID_ARGUMENT naming the field.

use hookd_sdk::{
    client::proto::{CreateTenantRequest, HmacSpec as ApiHmacSpec, UpdateTenantRequest},
    signature::{sign_hmac, HmacFields, HmacSpec, Message, Scheme, Secret},
};
use reqwest::StatusCode;
use tonic::Code;

use crate::harness::{TestServer, NOW};

fn mailgun() -> ApiHmacSpec {
    ApiHmacSpec {
        signature: "/signature/signature".into(),
        signed: "{/signature/timestamp}{/signature/token}".into(),
        timestamp: "/signature/timestamp".into(),
        ..Default::default()
    }
}

fn body(id: &str) -> Vec<u8> {
    format!(r#"{{"signature":{{"token":"tok-{id}"}},"event-data":{{"id":"{id}"}}}}"#).into_bytes()
}

/// Signs `body` with `spec` and `secret` at the harness clock.
fn signed(spec: &ApiHmacSpec, secret: &str, body: &[u8]) -> (Vec<(String, String)>, Vec<u8>) {
    let spec = HmacSpec::new(HmacFields::from(spec.clone())).unwrap();
    let key = Secret::from_provider(Scheme::Hmac, "k", secret).unwrap();
    let message = Message {
        event_id: "",
        timestamp: NOW,
        body,
        method: "POST",
        url: None,
    };
    let signing = sign_hmac(&spec, &key, &message, &[]).unwrap();
    (signing.headers, signing.body)
}

#[tokio::test]
async fn a_tenant_made_over_the_api_verifies_by_its_spec() {
    let s = TestServer::start("");
    let admin = s.admin().await;
    let created = admin
        .create_tenant(CreateTenantRequest {
            tenant_id: "mg".into(),
            scheme: "hmac".into(),
            event_id_field: "/event-data/id".into(),
            hmac: Some(mailgun()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(created.tenant.as_ref().unwrap().hmac, Some(mailgun()));
    assert_eq!(admin.get_tenant("mg").await.unwrap().hmac, Some(mailgun()));

    let (headers, sent) = signed(&mailgun(), &created.secret, &body("e1"));
    let a = s.post("mg", &headers, &sent).await;
    assert_eq!(
        (a.status, &a.body["event_id"]),
        (StatusCode::ACCEPTED, &"e1".into()),
        "{:?}",
        a.body
    );
    let (headers, sent) = signed(&mailgun(), "not-the-secret", &body("e2"));
    let a = s.post("mg", &headers, &sent).await;
    assert_eq!(
        (a.status, a.code()),
        (StatusCode::UNAUTHORIZED, "BAD_SIGNATURE")
    );

    // A new spec is in force for the next delivery: the signature moves to a header.
    let header = ApiHmacSpec {
        signature: "header:X-Mg-Signature".into(),
        ..mailgun()
    };
    let updated = admin
        .update_tenant(UpdateTenantRequest {
            tenant_id: "mg".into(),
            hmac: Some(header.clone()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(updated.hmac, Some(header.clone()));
    let (headers, sent) = signed(&mailgun(), &created.secret, &body("e3"));
    let a = s.post("mg", &headers, &sent).await;
    assert_eq!(
        (a.status, a.code()),
        (StatusCode::UNAUTHORIZED, "MISSING_SIGNATURE")
    );
    assert_eq!(a.body["details"]["header"], "hmac.signature");
    let (headers, sent) = signed(&header, &created.secret, &body("e3"));
    let a = s.post("mg", &headers, &sent).await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{:?}", a.body);

    // Leaving hmac drops the spec.
    let github = admin
        .update_tenant(UpdateTenantRequest {
            tenant_id: "mg".into(),
            scheme: Some("github".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!((github.scheme.as_str(), github.hmac), ("github", None));
}

#[tokio::test]
async fn bad_specs_are_invalid_arguments_naming_the_field() {
    let s = TestServer::start("");
    let admin = s.admin().await;
    let request = |scheme: &str, hmac: Option<ApiHmacSpec>| CreateTenantRequest {
        tenant_id: "bad".into(),
        scheme: scheme.into(),
        hmac,
        ..Default::default()
    };
    for (request, words) in [
        (
            request(
                "hmac",
                Some(ApiHmacSpec {
                    signed: "{bdy}".into(),
                    ..mailgun()
                }),
            ),
            "hmac.signed: unknown placeholder {bdy}",
        ),
        (
            request(
                "hmac",
                Some(ApiHmacSpec {
                    algorithm: "md5".into(),
                    ..mailgun()
                }),
            ),
            "hmac.algorithm: \"md5\" is not supported",
        ),
        (
            request("hmac", None),
            "hmac: scheme \"hmac\" needs its spec",
        ),
        (
            request("github", Some(mailgun())),
            "only scheme \"hmac\" reads",
        ),
    ] {
        let err = admin.create_tenant(request).await.expect_err(words);
        assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
        assert!(err.to_string().contains(words), "{words}: {err}");
    }
    assert_eq!(
        admin.get_tenant("bad").await.unwrap_err().code(),
        Code::NotFound
    );
}
