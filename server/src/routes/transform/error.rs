//! Why a transform did not produce a request: the closed list of kinds a
//! delivery records as its `transform_failed` reason.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What was too large.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Oversize {
    /// The transform's source code, over `MAX_CODE_BYTES`.
    Code,
    /// The request the handler returned, over `MAX_OUTPUT_BYTES`.
    Output,
}

/// A transform that failed to compile or to run. Serializable: a worker
/// process sends it to hookd.
///
/// Why a transform did not produce a request: the closed list of kinds a
/// delivery records as its `transform_failed` reason. Display is short and
/// plain, meant for operators, and never quotes the body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum TransformError {
    /// The code does not parse as JavaScript; the engine's message, with its
    /// line.
    #[error("syntax error: {0}")]
    Syntax(String),
    /// The code ran but registered no handler.
    #[error(
        "no transform handler: call addHandler(\"transform\", fn) or declare function transform(request, context)"
    )]
    NoHandler,
    /// The code threw: the thrown error's name and message, cut to
    /// `MAX_MESSAGE_BYTES`. The text is the transform author's.
    #[error("transform threw: {0}")]
    Threw(String),
    /// Stopped once its CPU budget had elapsed: by the engine's interrupt,
    /// or by hookd killing its worker process within the margin after.
    #[error("transform exceeded its CPU budget of {} ms", .budget.as_millis())]
    Timeout {
        /// The budget it ran with.
        budget: Duration,
    },
    /// Stopped by the interrupt at its wall-clock limit before it had used
    /// its CPU budget: it was kept waiting for a core that long.
    #[error(
        "transform ran past its wall-clock limit of {} ms before using its CPU budget (the machine is overloaded)",
        .limit.as_millis()
    )]
    Starved {
        /// The wall-clock limit it ran with.
        limit: Duration,
    },
    /// The engine refused an allocation past the memory limit.
    #[error("transform exceeded its memory limit of {} KiB", .limit_bytes / 1024)]
    OutOfMemory {
        /// The limit it ran with.
        limit_bytes: usize,
    },
    /// Recursion past the engine's stack limit.
    #[error("transform exceeded the maximum call stack size")]
    StackOverflow,
    /// The handler returned something that is not a request hookd can send.
    #[error("transform returned a bad request: {0}")]
    BadResult(String),
    /// The code or the returned request is over its size cap.
    #[error("{}", match .0 {
        Oversize::Code => "transform code is over 256 KiB",
        Oversize::Output => "transformed request is over 4 MiB",
    })]
    TooLarge(Oversize),
    /// The body is neither JSON nor UTF-8 text, so no transform can take it.
    #[error("the body is not UTF-8 text; transforms take JSON or text bodies")]
    NotText,
    /// The worker process running it stopped or could not be started
    /// (e.g. it went past the process's memory cap).
    #[error("the transform's process stopped: {0}")]
    Stopped(String),
}
