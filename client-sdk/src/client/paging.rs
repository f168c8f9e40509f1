//! The one loop that follows `next_page_token` until the last page, shared by every
//! `list_all_*` helper.

use std::future::Future;

use super::ClientError;

/// Calls `fetch_page` with `""`, then with each returned next-page token until one is
/// empty, and concatenates the items. `fetch_page` returns `(items, next_page_token)`.
pub(crate) async fn collect_pages<T, F, Fut>(mut fetch_page: F) -> Result<Vec<T>, ClientError>
where
    F: FnMut(String) -> Fut,
    Fut: Future<Output = Result<(Vec<T>, String), ClientError>>,
{
    let mut items = Vec::new();
    let mut page_token = String::new();
    loop {
        let (page, next_page_token) = fetch_page(page_token).await?;
        items.extend(page);
        if next_page_token.is_empty() {
            return Ok(items);
        }
        page_token = next_page_token;
    }
}

#[cfg(test)]
mod tests {
    use tonic::Status;

    use super::*;

    #[tokio::test]
    async fn follows_tokens_until_an_empty_one() {
        let mut seen = Vec::new();
        let items = collect_pages(|token| {
            seen.push(token.clone());
            let page = match token.as_str() {
                "" => (vec![1, 2], "p2".to_owned()),
                "p2" => (vec![3], "p3".to_owned()),
                _ => (vec![], String::new()),
            };
            async move { Ok(page) }
        })
        .await
        .expect("all pages");
        assert_eq!(items, vec![1, 2, 3]);
        assert_eq!(seen, vec!["", "p2", "p3"]);
    }

    #[tokio::test]
    async fn stops_at_the_first_failing_page() {
        let result: Result<Vec<u8>, _> = collect_pages(|token| async move {
            match token.as_str() {
                "" => Ok((vec![1], "p2".to_owned())),
                _ => Err(Status::invalid_argument("page_token").into()),
            }
        })
        .await;
        assert_eq!(
            result.expect_err("second page fails").code(),
            tonic::Code::InvalidArgument
        );
    }
}
