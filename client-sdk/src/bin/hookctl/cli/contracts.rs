//! Flags of `hookctl contracts`: a tenant's event contracts (JSON Schemas per event
//! type and version), checking a sample payload, and the contract sheet.

use std::path::PathBuf;

use clap::{ArgGroup, Args, Subcommand};

/// `hookctl contracts ...`
#[derive(Debug, Subcommand)]
pub enum ContractsCommand {
    /// Save a contract (a new revision when one exists for the type and version).
    Put(PutContractArgs),
    /// Show the contract in force for a type (and version).
    Get(ContractKey),
    /// List a tenant's contracts and its contract policy.
    List {
        /// The tenant id.
        tenant: String,
    },
    /// Delete a contract saved over the API.
    Delete(ContractKey),
    /// Check a sample payload against the tenant's contracts; sends nothing. Exits 5
    /// when ingest would refuse it.
    Validate {
        /// The tenant id.
        tenant: String,
        /// The payload, inline JSON.
        #[arg(
            long,
            conflicts_with = "payload_file",
            required_unless_present = "payload_file"
        )]
        payload: Option<String>,
        /// Read the payload from this file, byte for byte.
        #[arg(long)]
        payload_file: Option<PathBuf>,
    },
    /// Print the tenant's contract sheet as Markdown, to hand to the sender: every
    /// event type, its required fields and example, the signing scheme and tolerance.
    Doc {
        /// The tenant id.
        tenant: String,
    },
}

/// One contract's tenant, type and version.
#[derive(Debug, Args)]
pub struct ContractKey {
    /// The tenant id.
    pub tenant: String,
    /// The event type, e.g. order.paid.
    pub event_type: String,
    /// The version; omit for the contract without one.
    #[arg(long)]
    pub version: Option<String>,
}

/// `hookctl contracts put ...`
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("schema_source").required(true).args(["schema", "schema_file"])))]
#[command(group(ArgGroup::new("example_source").required(true).args(["example", "example_file"])))]
pub struct PutContractArgs {
    /// The tenant id.
    pub tenant: String,
    /// The event type it covers, e.g. order.paid.
    #[arg(long = "type")]
    pub event_type: String,
    /// The version it covers; omit to cover every version without its own contract.
    #[arg(long)]
    pub version: Option<String>,
    /// The JSON Schema (draft 2020-12), inline.
    #[arg(long)]
    pub schema: Option<String>,
    /// Read the JSON Schema from this file.
    #[arg(long)]
    pub schema_file: Option<PathBuf>,
    /// One real payload, inline; it must pass the schema.
    #[arg(long)]
    pub example: Option<String>,
    /// Read the example payload from this file.
    #[arg(long)]
    pub example_file: Option<PathBuf>,
}
