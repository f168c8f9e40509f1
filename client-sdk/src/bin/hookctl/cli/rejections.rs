//! Flags of `hookctl rejections`.

use clap::{Subcommand, ValueEnum};
use hookd_sdk::client::proto::RejectionKind;

/// `hookctl rejections ...`
#[derive(Debug, Subcommand)]
pub enum RejectionsCommand {
    /// List the requests a tenant refused, newest first: content refused
    /// after a valid signature (with the first 4 KiB of the body) and bad or
    /// missing signatures (without body).
    List {
        /// The tenant id.
        tenant: String,
        /// Only the rejection of this request (`req_...`, from the sender's
        /// answer); its kept body is printed too.
        #[arg(long)]
        request_id: Option<String>,
        /// Only this kind.
        #[arg(long, value_enum)]
        kind: Option<KindArg>,
        /// Items per page (at most 1000; default 100).
        #[arg(long, default_value_t = 0, hide_default_value = true)]
        page_size: u32,
        /// Continue from the token printed with the previous page.
        #[arg(long, default_value = "", hide_default_value = true)]
        page_token: String,
    },
}

/// Rejection kinds as typed on the command line.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum KindArg {
    /// Signature valid, content refused.
    Content,
    /// Signature bad or missing.
    Signature,
}

impl From<KindArg> for RejectionKind {
    fn from(kind: KindArg) -> RejectionKind {
        match kind {
            KindArg::Content => RejectionKind::Content,
            KindArg::Signature => RejectionKind::Signature,
        }
    }
}
