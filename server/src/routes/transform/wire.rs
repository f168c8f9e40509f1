//! The frames hookd and a transform worker process exchange over the worker's
//! stdin and stdout.

use std::io::{self, Read, Write};

use super::{TransformError, TransformLimits, MAX_CODE_BYTES, MAX_MEMORY_BYTES, MAX_OUTPUT_BYTES};

/// The largest request frame a worker reads: the code, the request as JSON
/// (hookd sends none larger than the run's memory limit, which could not
/// hold it parsed) and the context.
pub(super) const MAX_REQUEST_FRAME: usize = MAX_CODE_BYTES + MAX_MEMORY_BYTES + (64 << 10);
/// The largest answer hookd reads: the returned request as JSON may take
/// [`MAX_OUTPUT_BYTES`] plus 1 MiB for its keys and escapes; an error's
/// JSON is far smaller.
pub(super) const MAX_RESULT_JSON_BYTES: usize = MAX_OUTPUT_BYTES + (1 << 20);
const MAX_ANSWER_FRAME: usize = MAX_RESULT_JSON_BYTES + 1;

/// Run the code's top level and check it registers a handler.
const OP_CHECK: u8 = 1;
/// Run the handler on a request.
const OP_RUN: u8 = 2;

const CHECKED: u8 = 0;
const DROP: u8 = 1;
const SEND: u8 = 2;
const FAILED: u8 = 3;

/// What a worker is asked to do.
///
/// The frames hookd and a transform worker process exchange over the
/// worker's stdin and stdout: one request, then one answer, each a 4-byte
/// big-endian length and that many bytes. Every length is checked against
/// a cap before anything is allocated for it, so neither side can make the
/// other hold more than the cap.
#[derive(Debug, PartialEq)]
pub(super) enum Job {
    /// Run the top level of `code` within `limits`.
    Check {
        code: String,
        limits: TransformLimits,
    },
    /// Run `code`'s handler on `input` (the request as JSON) and `context`.
    Run {
        code: String,
        input: String,
        context: String,
        limits: TransformLimits,
    },
}

/// What a worker answered.
#[derive(Debug, PartialEq)]
pub(super) enum Answer {
    /// The code's top level ran and registered a handler.
    Checked,
    /// The handler dropped the event.
    Drop,
    /// The handler returned this request, as JSON.
    Send(String),
    /// The run failed.
    Failed(TransformError),
}

impl Job {
    /// The job as one frame.
    pub(super) fn encode(&self) -> Vec<u8> {
        let (op, code, limits, rest): (u8, &str, &TransformLimits, [&str; 2]) = match self {
            Job::Check { code, limits } => (OP_CHECK, code, limits, ["", ""]),
            Job::Run {
                code,
                input,
                context,
                limits,
            } => (OP_RUN, code, limits, [input, context]),
        };
        let mut body = vec![op];
        body.extend_from_slice(&(limits.memory_bytes() as u64).to_be_bytes());
        body.extend_from_slice(&(limits.cpu().as_micros() as u64).to_be_bytes());
        for part in [code].into_iter().chain(rest) {
            body.extend_from_slice(&(part.len() as u32).to_be_bytes());
            body.extend_from_slice(part.as_bytes());
        }
        framed(body)
    }

    /// Reads the next job; `None` at the end of the stream.
    pub(super) fn read(from: &mut impl Read) -> io::Result<Option<Job>> {
        let Some(frame) = read_frame(from, MAX_REQUEST_FRAME)? else {
            return Ok(None);
        };
        let mut at = Cursor(&frame);
        let op = at.byte()?;
        let memory = at.u64()?;
        let cpu = at.u64()?;
        let limits = TransformLimits::new(
            usize::try_from(memory).map_err(|_| invalid("memory limit"))?,
            std::time::Duration::from_micros(cpu),
        )
        .map_err(|_| invalid("limits"))?;
        let code = at.text()?;
        let job = match op {
            OP_CHECK => Job::Check { code, limits },
            OP_RUN => Job::Run {
                code,
                input: at.text()?,
                context: at.text()?,
                limits,
            },
            _ => return Err(invalid("operation")),
        };
        Ok(Some(job))
    }
}

impl Answer {
    /// Writes the answer as one frame.
    pub(super) fn write(&self, to: &mut impl Write) -> io::Result<()> {
        let frame = match self {
            Answer::Checked => framed(vec![CHECKED]),
            Answer::Drop => framed(vec![DROP]),
            Answer::Send(json) => {
                let mut body = Vec::with_capacity(json.len() + 1);
                body.push(SEND);
                body.extend_from_slice(json.as_bytes());
                framed(body)
            }
            Answer::Failed(error) => {
                let mut body = vec![FAILED];
                serde_json::to_writer(&mut body, error).map_err(io::Error::other)?;
                framed(body)
            }
        };
        to.write_all(&frame)?;
        to.flush()
    }

    /// The answer in a whole frame's body (its length prefix taken off).
    pub(super) fn decode(body: &[u8]) -> io::Result<Answer> {
        let (&tag, rest) = body.split_first().ok_or_else(|| invalid("empty answer"))?;
        Ok(match tag {
            CHECKED => Answer::Checked,
            DROP => Answer::Drop,
            SEND => {
                Answer::Send(String::from_utf8(rest.to_vec()).map_err(|_| invalid("answer text"))?)
            }
            FAILED => Answer::Failed(serde_json::from_slice(rest).map_err(io::Error::other)?),
            _ => return Err(invalid("answer tag")),
        })
    }
}

/// The length an answer frame's prefix announces, refused above the cap.
pub(super) fn answer_len(prefix: [u8; 4]) -> io::Result<usize> {
    let len = u32::from_be_bytes(prefix) as usize;
    match len {
        0 => Err(invalid("empty answer")),
        len if len > MAX_ANSWER_FRAME => Err(invalid("answer over its cap")),
        len => Ok(len),
    }
}

fn framed(body: Vec<u8>) -> Vec<u8> {
    let mut frame = Vec::with_capacity(body.len() + 4);
    frame.extend_from_slice(&(body.len() as u32).to_be_bytes());
    frame.extend_from_slice(&body);
    frame
}

/// One frame's body, `None` at a clean end of the stream.
fn read_frame(from: &mut impl Read, cap: usize) -> io::Result<Option<Vec<u8>>> {
    let mut prefix = [0u8; 4];
    match from.read_exact(&mut prefix) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_be_bytes(prefix) as usize;
    if len > cap {
        return Err(invalid("frame over its cap"));
    }
    let mut body = vec![0; len];
    from.read_exact(&mut body)?;
    Ok(Some(body))
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("bad transform frame: {what}"),
    )
}

/// Reads a frame's fields in order.
struct Cursor<'a>(&'a [u8]);

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> io::Result<&[u8]> {
        if self.0.len() < n {
            return Err(invalid("short frame"));
        }
        let (taken, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(taken)
    }

    fn byte(&mut self) -> io::Result<u8> {
        Ok(self.take(1)?[0])
    }

    fn u64(&mut self) -> io::Result<u64> {
        let bytes = self.take(8)?;
        Ok(u64::from_be_bytes(bytes.try_into().expect("8 bytes")))
    }

    fn text(&mut self) -> io::Result<String> {
        let len = u32::from_be_bytes(self.take(4)?.try_into().expect("4 bytes")) as usize;
        String::from_utf8(self.take(len)?.to_vec()).map_err(|_| invalid("text"))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn jobs_and_answers_come_through_whole() {
        let limits = TransformLimits::new(2 << 20, Duration::from_millis(7)).unwrap();
        for job in [
            Job::Check {
                code: "addHandler('transform', r => r)".into(),
                limits,
            },
            Job::Run {
                code: "x".into(),
                input: "{\"a\":1}".into(),
                context: "{}".into(),
                limits,
            },
        ] {
            let frame = job.encode();
            assert_eq!(Job::read(&mut frame.as_slice()).unwrap(), Some(job));
        }
        for answer in [
            Answer::Checked,
            Answer::Drop,
            Answer::Send("{\"path\":\"/\"}".into()),
            Answer::Failed(TransformError::Timeout {
                budget: Duration::from_millis(7),
            }),
        ] {
            let mut frame = Vec::new();
            answer.write(&mut frame).unwrap();
            let len = answer_len(frame[..4].try_into().unwrap()).unwrap();
            assert_eq!(Answer::decode(&frame[4..4 + len]).unwrap(), answer);
        }
        assert_eq!(Job::read(&mut io::empty()).unwrap(), None);
    }

    #[test]
    fn a_frame_over_its_cap_is_refused_before_it_is_read() {
        let huge = ((MAX_ANSWER_FRAME + 1) as u32).to_be_bytes();
        assert!(answer_len(huge).is_err());
        let mut request = ((MAX_REQUEST_FRAME + 1) as u32).to_be_bytes().to_vec();
        request.extend_from_slice(&[0; 16]);
        assert!(Job::read(&mut request.as_slice()).is_err());
    }
}
