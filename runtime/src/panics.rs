//! Panics in the libraries edgert calls (tract, on a model or input it did not expect), contained
//! where they are called: the caller gets an error naming its file, the user one line and an exit
//! code. The binary that ships aborts on a panic (`panic = "abort"`, the dist profile), where
//! nothing can be caught: there the hook prints that same line and exits with that code.

use std::any::Any;
use std::cell::RefCell;
use std::panic::{self, AssertUnwindSafe};

use crate::error::one_line;
use crate::{Error, Result};

type ToError = Box<dyn Fn(String) -> Error>;

thread_local! {
    /// How each `contained` call on this thread turns a panic's message into its error,
    /// innermost last.
    static CONTAINING: RefCell<Vec<ToError>> = const { RefCell::new(Vec::new()) };
}

/// `f`'s result, or its panic as the error `to_error` makes of the panic's message. Code that a
/// library runs on other threads is contained there too when those are threads `contain_thread`
/// was called on.
pub fn contained<T>(
    f: impl FnOnce() -> Result<T>,
    to_error: impl Fn(String) -> Error + 'static,
) -> Result<T> {
    CONTAINING.with(|c| c.borrow_mut().push(Box::new(to_error)));
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    let to_error = CONTAINING.with(|c| c.borrow_mut().pop()).expect("pushed above");
    result.unwrap_or_else(|payload| Err(to_error(message(&*payload))))
}

/// Contains every panic on this thread that no `contained` call on it catches, as `to_error`
/// makes it: for a thread pool's threads, which run only parts of calls contained on another
/// thread (a panic there travels back to that call: rayon resumes it on the thread that handed
/// the work over). The hook then stays silent there, or, where panics abort, says this error.
pub fn contain_thread(to_error: impl Fn(String) -> Error + 'static) {
    CONTAINING.with(|c| c.borrow_mut().insert(0, Box::new(to_error)));
}

/// A panic's message: the text `panic!` was given, where it was text, without the backtrace an
/// unwrapped error carries when `RUST_BACKTRACE` is set.
pub fn message(payload: &(dyn Any + Send)) -> String {
    let text = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into());
    match text.find("Stack backtrace:") {
        Some(at) => text[..at].trim_end().to_string(),
        None => text,
    }
}

/// The error a panic inside `contained` on this thread becomes, if it is inside one.
pub(crate) fn contained_error(payload: &(dyn Any + Send)) -> Option<Error> {
    CONTAINING
        .try_with(|c| c.try_borrow().ok().and_then(|c| c.last().map(|to_error| to_error(message(payload)))))
        .ok()
        .flatten()
}

/// Installs the process's panic hook. A panic inside `contained` prints nothing where it unwinds
/// (its caller reports the error) and, where panics abort, the error's line before exiting with
/// its code. Any other panic is a bug in edgert, told as Rust tells it.
pub fn install_hook() {
    let default = panic::take_hook();
    panic::set_hook(Box::new(move |info| match contained_error(info.payload()) {
        Some(_) if !cfg!(panic = "abort") => {}
        Some(error) => {
            eprintln!("edgert: error: {}", one_line(&error));
            std::process::exit(error.exit_code().into());
        }
        None => default(info),
    }));
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn failed(reason: String) -> Error {
        Error::Inference { path: Path::new("m.onnx").into(), reason }
    }

    #[test]
    fn a_panic_becomes_the_callers_error_and_a_value_passes_through() {
        let caught = contained(|| -> Result<u8> { panic!("index out of bounds: {}", 7) }, failed);
        match caught {
            Err(Error::Inference { path, reason }) => {
                assert_eq!(path, Path::new("m.onnx"));
                assert_eq!(reason, "index out of bounds: 7");
            }
            other => panic!("{other:?}"),
        }
        let unwrapped = contained(
            || -> Result<u8> {
                panic!("called `Result::unwrap()` on an `Err` value: bad axis\n\nStack backtrace:\n 0: f")
            },
            failed,
        );
        assert!(one_line(&unwrapped.unwrap_err()).ends_with("value: bad axis"));
        let text = contained(|| -> Result<u8> { std::panic::panic_any(3_u32) }, failed).unwrap_err();
        assert!(one_line(&text).contains("a panic without a message"), "{text}");
        assert_eq!(contained(|| Ok(5), failed).unwrap(), 5);
        let refused = contained(|| -> Result<u8> { Err(failed("refused".into())) }, failed).unwrap_err();
        assert!(one_line(&refused).contains("refused"), "{refused}");
    }

    #[test]
    fn the_hook_knows_a_contained_panic_only_while_it_is_contained() {
        let payload: Box<dyn Any + Send> = Box::new("boom");
        assert!(contained_error(&*payload).is_none());
        let inner = contained(
            || -> Result<Option<Error>> {
                let nested = contained(|| Ok(contained_error(&*payload)), |m| failed(format!("inner {m}")))?;
                assert!(one_line(&nested.unwrap()).contains("inner boom"));
                Ok(contained_error(&*payload))
            },
            |m| failed(format!("outer {m}")),
        )
        .unwrap();
        assert!(one_line(&inner.unwrap()).contains("outer boom"));
        assert!(contained_error(&*payload).is_none());
    }
}
