//! Ctrl-C and SIGTERM, for every command. The first sets the stop flag, which the commands that
//! can end early with what they have read (`bench`, `run --source`, `capture`, `validate`, `tune`);
//! whatever such a command is blocked in meanwhile (a read, a socket, an inference, a build), one
//! second later the process ends with one line and exit 130. Any other command ends so at once.
//! A second Ctrl-C ends the process at once.

use std::io::Read;
use std::os::unix::net::UnixStream;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// The exit code of a run stopped by a signal, as shells report one.
pub const INTERRUPTED: u8 = 130;

/// How long a command that reads the stop flag has after the first signal to end by itself.
pub const GRACE: Duration = Duration::from_secs(1);

/// Installs the handlers for `command` (its name, for the line), which has `grace` after the
/// first signal to end by itself, and returns the stop flag.
pub fn on_signal(command: &'static str, grace: Duration) -> anyhow::Result<Arc<AtomicBool>> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let stop = Arc::new(AtomicBool::new(false));
    let (mut woken, wake) = UnixStream::pair()?;
    for signal in [SIGINT, SIGTERM] {
        let handled =
            signal_hook::flag::register_conditional_shutdown(signal, i32::from(INTERRUPTED), stop.clone())
                .and_then(|_| signal_hook::flag::register(signal, stop.clone()))
                .and_then(|_| signal_hook::low_level::pipe::register(signal, wake.try_clone()?));
        handled.map_err(|e| anyhow::anyhow!("cannot handle signal {signal}: {e}"))?;
    }
    std::thread::Builder::new().name("edgert-stop".into()).spawn(move || {
        // One byte arrives with the first signal; an error means no signal can come.
        if woken.read(&mut [0u8]).is_ok_and(|n| n == 1) {
            std::thread::sleep(grace);
            eprintln!("edgert: error: {command} interrupted by a signal");
            std::process::exit(i32::from(INTERRUPTED));
        }
    })?;
    Ok(stop)
}
