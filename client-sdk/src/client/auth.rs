//! The interceptor that puts the bearer token on every call, built once so a bad token
//! fails at construction instead of on each request.

use tonic::{
    metadata::{Ascii, MetadataValue},
    service::Interceptor,
    Request, Status,
};

use super::ClientError;

/// `authorization: Bearer <token>`, marked sensitive so HTTP/2 tracing never logs it.
#[derive(Clone)]
pub(crate) struct BearerAuth {
    header: MetadataValue<Ascii>,
}

impl BearerAuth {
    pub(crate) fn new(token: &str) -> Result<BearerAuth, ClientError> {
        let mut header: MetadataValue<Ascii> = format!("Bearer {token}")
            .parse()
            .map_err(|_| ClientError::InvalidToken)?;
        header.set_sensitive(true);
        Ok(BearerAuth { header })
    }
}

impl Interceptor for BearerAuth {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        request
            .metadata_mut()
            .insert("authorization", self.header.clone());
        Ok(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_request_carries_the_bearer_token() {
        let mut auth = BearerAuth::new("tok_secret").expect("valid token");
        let request = auth.call(Request::new(())).expect("interceptor passes");
        let header = request.metadata().get("authorization").expect("header set");
        assert_eq!(header.to_str().expect("ascii"), "Bearer tok_secret");
        assert!(header.is_sensitive());
    }

    #[test]
    fn a_token_that_cannot_be_a_header_is_refused_up_front() {
        assert!(matches!(
            BearerAuth::new("line\nbreak"),
            Err(ClientError::InvalidToken)
        ));
    }
}
