//! Short-lived child processes of this same executable (hidden subcommands) that exchange
//! one JSON document each way: the crypto selftest and NVML run in them, so that the CUDA
//! context, NVML and libcuda never live in the long-running daemon, and a driver call that
//! hangs or crashes takes down the child, not the agent.

use serde::Serialize;
use serde::de::DeserializeOwned;
use std::io::{Read as _, Write as _};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The running executable's path, for starting `node-agent SUBCOMMAND`.
pub fn this_executable_path(subcommand: &str) -> Result<std::path::PathBuf, String> {
    std::env::current_exe()
        .map_err(|e| format!("cannot find this executable to start `{subcommand}`: {e}"))
}

/// `node-agent SUBCOMMAND` of the running executable.
pub fn this_executable(subcommand: &str) -> Result<Command, String> {
    let mut command = Command::new(this_executable_path(subcommand)?);
    command.arg(subcommand);
    Ok(command)
}

/// Runs `command` with `input` as JSON on its standard input and reads one JSON document
/// of type `O` from its standard output, waiting at most `timeout`. A child that cannot
/// start, fails, hangs (it is killed) or prints something unreadable is an error saying
/// which; `what` names the expected output in that message.
pub fn exchange_json<I: Serialize, O: DeserializeOwned>(
    command: &mut Command,
    input: &I,
    timeout: Duration,
    what: &str,
) -> Result<O, String> {
    let input = serde_json::to_vec(input).map_err(|e| format!("input: {e}"))?;
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("could not start: {e}"))?;
    let pid = child.id();
    // Writing and reading on their own threads: the child may print before it has read all
    // of its input, and a full pipe must never block this thread past the timeout.
    let writer = child.stdin.take().map(|mut stdin| {
        std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        })
    });
    let reader = child.stdout.take().map(|mut stdout| {
        std::thread::spawn(move || {
            let mut out = Vec::new();
            let _ = stdout.read_to_end(&mut out);
            out
        })
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "(pid {pid}) did not finish within {} s and was killed",
                    timeout.as_secs_f64()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(format!("(pid {pid}): waiting failed: {e}")),
        }
    };
    if let Some(w) = writer {
        let _ = w.join();
    }
    let out = reader.and_then(|r| r.join().ok()).unwrap_or_default();
    if !status.success() {
        return Err(format!("(pid {pid}) failed: {status}"));
    }
    serde_json::from_slice(&out).map_err(|e| {
        let text = String::from_utf8_lossy(&out);
        let shown: String = text.chars().take(200).collect();
        format!("(pid {pid}) printed no {what} ({e}): {shown:?}")
    })
}

/// The child's side: reads the JSON input from standard input, answers with `handle`'s
/// output as one JSON line on standard output.
pub fn serve_json<I: DeserializeOwned, O: Serialize>(
    handle: impl FnOnce(I) -> O,
) -> anyhow::Result<()> {
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input)?;
    let output = handle(serde_json::from_str(&input)?);
    let mut stdout = std::io::stdout().lock();
    serde_json::to_writer(&mut stdout, &output)?;
    stdout.write_all(b"\n")?;
    stdout.flush()?;
    Ok(())
}
