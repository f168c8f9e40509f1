//! One QuickJS sandbox per run: runtime, context and prelude, and engine
//! failures turned into [`TransformError`] kinds.

use std::{
    sync::{
        atomic::{AtomicU8, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use rquickjs::{
    context::{intrinsic, EvalOptions},
    convert::Coerced,
    Context, Ctx, Error, Function, Object, Runtime, Value,
};

use super::{
    wire::MAX_RESULT_JSON_BYTES, Oversize, TransformError, TransformLimits, MAX_MESSAGE_BYTES,
    MAX_STACK_BYTES,
};

/// The built-ins a transform gets: no `performance` clock, no WeakRef
/// finalizers (they would need a job loop), nothing from outside the
/// language.
type Intrinsics = (
    intrinsic::Date,
    intrinsic::Eval,
    intrinsic::RegExpCompiler,
    intrinsic::RegExp,
    intrinsic::Json,
    intrinsic::Proxy,
    intrinsic::MapSet,
    intrinsic::TypedArrays,
    intrinsic::Promise,
);

/// Runs before the transform's code. `state` is reachable only through the
/// two functions' closures, and Rust reads its plain data properties
/// without running script. `__hookdBegin()` is prepended to the code on its
/// first line: if it never ran, the code did not parse.
const PRELUDE: &str = r#"(() => {
  "use strict";
  const state = { began: false, handler: undefined };
  const discard = function () {};
  globalThis.console = { log: discard, info: discard, warn: discard, error: discard, debug: discard, trace: discard };
  globalThis.addHandler = function addHandler(name, handler) {
    if (name !== "transform") throw new TypeError('addHandler: only the "transform" handler exists');
    if (typeof handler !== "function") throw new TypeError("addHandler: the handler must be a function");
    state.handler = handler;
  };
  Object.defineProperty(globalThis, "__hookdBegin", {
    configurable: true,
    value: function () { state.began = true; delete globalThis.__hookdBegin; },
  });
  return state;
})()"#;

/// The top-level `function transform` (or `const transform = ...`) form.
const GLOBAL_HANDLER: &str = r#"typeof transform === "function" ? transform : undefined"#;

/// The script name in engine messages, whose `transform:<line>` gives the line.
const FILE_NAME: &str = "transform";

/// Runs `code`'s top level and checks it registers a handler.
pub(super) fn check(code: &str, limits: &TransformLimits) -> Result<(), TransformError> {
    Sandbox::open(limits)?.with(|ctx, failed| load(&ctx, code, failed).map(drop))
}

/// Runs the handler on the JSON `input` and `context`; `None` drops the
/// event, else the JSON of the request the handler returned.
///
/// One QuickJS sandbox per run: a fresh runtime with the run's memory limit,
/// the engine's stack limit and a deadline interrupt; a context with the
/// language's built-ins only; a prelude (written in JavaScript, so no host
/// function is reachable) that defines `addHandler` and a discarding
/// `console`. Engine failures become [`TransformError`] kinds here.
pub(super) fn run(
    code: &str,
    input: &str,
    context: &str,
    limits: &TransformLimits,
) -> Result<Option<String>, TransformError> {
    Sandbox::open(limits)?.with(|ctx, failed| {
        let handler = load(&ctx, code, failed)?;
        let request = ctx.json_parse(input).map_err(|e| failed.on(&ctx, e))?;
        let context = ctx.json_parse(context).map_err(|e| failed.on(&ctx, e))?;
        let returned: Value = handler
            .call((request, context))
            .map_err(|e| failed.on(&ctx, e))?;
        serialize(&ctx, returned, failed)
    })
}

/// Evaluates the prelude and the code; the registered handler.
fn load<'js>(
    ctx: &Ctx<'js>,
    code: &str,
    failed: &Failure,
) -> Result<Function<'js>, TransformError> {
    let state: Object = ctx.eval(PRELUDE).map_err(|e| failed.on(ctx, e))?;
    let mut options = EvalOptions::default();
    options.strict = starts_strict(code);
    options.filename = Some(FILE_NAME.to_owned());
    let evaluated: Result<Value, Error> =
        ctx.eval_with_options(format!("__hookdBegin();{code}"), options);
    if let Err(error) = evaluated {
        let began = state.get::<_, bool>("began").unwrap_or(false);
        return Err(match failed.on(ctx, error) {
            TransformError::Threw(message) if !began => TransformError::Syntax(
                message
                    .strip_prefix("SyntaxError: ")
                    .unwrap_or(&message)
                    .to_owned(),
            ),
            other => other,
        });
    }
    if let Ok(handler) = state.get::<_, Function>("handler") {
        return Ok(handler);
    }
    let global: Value = ctx.eval(GLOBAL_HANDLER).map_err(|e| failed.on(ctx, e))?;
    global.into_function().ok_or(TransformError::NoHandler)
}

/// A leading `"use strict"` directive would stop being one behind the
/// prepended call, so the whole script is evaluated strict instead.
fn starts_strict(code: &str) -> bool {
    let code = code.trim_start();
    code.starts_with("\"use strict\"") || code.starts_with("'use strict'")
}

/// The returned value as JSON, or `None` for a drop.
fn serialize<'js>(
    ctx: &Ctx<'js>,
    returned: Value<'js>,
    failed: &Failure,
) -> Result<Option<String>, TransformError> {
    if returned.is_null() || returned.is_undefined() || returned.as_bool() == Some(false) {
        return Ok(None);
    }
    if returned.is_promise() {
        return Err(bad(
            "the handler returned a Promise; async handlers are not supported",
        ));
    }
    if !returned.is_object() || returned.is_array() || returned.is_function() {
        return Err(bad(
            "the handler must return the request object, or null, undefined or false to drop the event",
        ));
    }
    let json = ctx
        .json_stringify(returned)
        .map_err(|e| match failed.on(ctx, e) {
            TransformError::Threw(why) => bad(&format!("the request cannot be serialized: {why}")),
            other => other,
        })?;
    let json = json.ok_or_else(|| bad("the request cannot be serialized"))?;
    // Measured in the engine's own memory before a byte is copied out.
    let json = json.to_cstring().map_err(|e| failed.on(ctx, e))?;
    if json.len() > MAX_RESULT_JSON_BYTES {
        return Err(TransformError::TooLarge(Oversize::Output));
    }
    Ok(Some(json.as_str().to_owned()))
}

fn bad(why: &str) -> TransformError {
    TransformError::BadResult(why.to_owned())
}

/// The interrupt has not fired.
const RUNNING: u8 = 0;
/// The interrupt fired: the run used its CPU budget.
const OVER_CPU: u8 = 1;
/// The interrupt fired: the run reached its wall-clock limit first.
const OVER_WALL: u8 = 2;

/// CPU time the calling thread has used: a run's budget is counted in it,
/// so a run waiting for a core (transform threads run at the lowest
/// priority) is not charged for the wait.
fn thread_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// A runtime and context for one run, with its interrupt.
struct Sandbox {
    context: Context,
    failed: Failure,
}

impl Sandbox {
    fn open(limits: &TransformLimits) -> Result<Self, TransformError> {
        let failed = Failure {
            interrupted: Arc::new(AtomicU8::new(RUNNING)),
            limits: *limits,
        };
        let runtime = Runtime::new().map_err(|_| failed.out_of_memory())?;
        runtime.set_memory_limit(limits.memory_bytes());
        runtime.set_max_stack_size(MAX_STACK_BYTES);
        let budget = limits.cpu();
        let started = thread_cpu();
        let wall_deadline = Instant::now() + limits.wall();
        let interrupted = Arc::clone(&failed.interrupted);
        runtime.set_interrupt_handler(Some(Box::new(move || {
            let why = if thread_cpu().saturating_sub(started) >= budget {
                OVER_CPU
            } else if Instant::now() >= wall_deadline {
                OVER_WALL
            } else {
                return false;
            };
            interrupted.store(why, Ordering::Relaxed);
            true
        })));
        let context = Context::builder()
            .with::<Intrinsics>()
            .build(&runtime)
            .map_err(|_| failed.out_of_memory())?;
        Ok(Sandbox { context, failed })
    }

    fn with<R>(
        self,
        f: impl for<'js> FnOnce(Ctx<'js>, &Failure) -> Result<R, TransformError>,
    ) -> Result<R, TransformError> {
        let failed = &self.failed;
        self.context.with(|ctx| f(ctx, failed))
    }
}

/// Turns an engine error into a kind, knowing whether the interrupt fired.
struct Failure {
    interrupted: Arc<AtomicU8>,
    limits: TransformLimits,
}

impl Failure {
    fn on(&self, ctx: &Ctx<'_>, error: Error) -> TransformError {
        match self.interrupted.load(Ordering::Relaxed) {
            OVER_CPU => {
                return TransformError::Timeout {
                    budget: self.limits.cpu(),
                }
            }
            OVER_WALL => {
                return TransformError::Starved {
                    limit: self.limits.wall(),
                }
            }
            _ => {}
        }
        match error {
            Error::Exception => self.exception(ctx.catch()),
            Error::Allocation => self.out_of_memory(),
            other => TransformError::Threw(cut(&other.to_string())),
        }
    }

    fn out_of_memory(&self) -> TransformError {
        TransformError::OutOfMemory {
            limit_bytes: self.limits.memory_bytes(),
        }
    }

    fn exception(&self, thrown: Value<'_>) -> TransformError {
        if thrown.is_null() {
            // What the engine leaves when it could not even allocate the error.
            return self.out_of_memory();
        }
        let Some(error) = thrown.as_object().filter(|_| thrown.is_error()) else {
            let text = thrown
                .get::<Coerced<String>>()
                .map(|c| c.0)
                .unwrap_or_else(|_| "a value that is not an Error".to_owned());
            return TransformError::Threw(cut(&text));
        };
        let name: String = error.get("name").unwrap_or_else(|_| "Error".to_owned());
        let message: String = error.get("message").unwrap_or_default();
        match (name.as_str(), message.as_str()) {
            ("InternalError", "out of memory") => self.out_of_memory(),
            ("RangeError", "Maximum call stack size exceeded") => TransformError::StackOverflow,
            _ => {
                let line = error
                    .get::<_, String>("stack")
                    .ok()
                    .and_then(|stack| line_of(&stack))
                    .map(|line| format!(" (line {line})"))
                    .unwrap_or_default();
                TransformError::Threw(cut(&format!("{name}: {message}{line}")))
            }
        }
    }
}

/// The first `transform:<line>` in an engine stack trace.
fn line_of(stack: &str) -> Option<u32> {
    let at = stack.find("transform:")? + FILE_NAME.len() + 1;
    let digits: String = stack[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// At most [`MAX_MESSAGE_BYTES`], on one line.
fn cut(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if out.len() + c.len_utf8() > MAX_MESSAGE_BYTES {
            break;
        }
        out.push(if c.is_control() { ' ' } else { c });
    }
    out
}
