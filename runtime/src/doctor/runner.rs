//! Runs the checks in order, one at a time, each timed; a panic inside one is its failure, and so
//! is one still running at ten times its budget (a read stuck in a driver, a wedged GPU call).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{checks, Check, Done, Facts, Options, Outcome, Report, Run};
use crate::metrics::deadline::within;
use crate::metrics::error::SensorError;
use crate::metrics::host::Host;

/// The least time a check is given before it is given up on, however small its budget.
pub(super) const LEAST_DEADLINE: Duration = Duration::from_secs(10);

/// Runs every check of the areas asked for; `each` sees each result as it comes (for a table
/// printed as the run goes).
pub fn run(options: &Options, each: impl FnMut(&Done)) -> Report {
    let started = Instant::now();
    let facts = Arc::new(Facts::read(options));
    let done = run_checks(checks(options), &Arc::new(options.clone()), &facts, LEAST_DEADLINE, each);
    let count = |status: &str| done.iter().filter(|d| d.outcome.status() == status).count();
    Report {
        schema: "edgert.doctor/1",
        provenance: facts.provenance.clone(),
        host: Host::describe(),
        quick: options.quick,
        only: options.only.clone(),
        model: options.model.as_ref().map(|m| m.display().to_string()),
        passed: count("pass"),
        failed: count("fail"),
        skipped: count("skip"),
        checks: done,
        elapsed_ms: started.elapsed().as_secs_f64() * 1e3,
    }
}

pub(super) fn run_checks(
    list: Vec<Check>,
    options: &Arc<Options>,
    facts: &Arc<Facts>,
    least_deadline: Duration,
    mut each: impl FnMut(&Done),
) -> Vec<Done> {
    let mut done: Vec<Done> = Vec::new();
    for check in list {
        if !options.only.is_empty() && !options.only.contains(&check.area) {
            continue;
        }
        let t = Instant::now();
        let unmet = check.needs.and_then(|needed| {
            let passed = done.iter().any(|d| d.area == check.area && d.name == needed && d.outcome.passed());
            (!passed)
                .then(|| Outcome::skip(format!("needs `{} {needed}`, which did not pass", check.area.name())))
        });
        let deadline = (check.budget * 10).max(least_deadline);
        let outcome = unmet.unwrap_or_else(|| guarded(check.run, options, facts, deadline));
        let result = Done {
            area: check.area,
            name: check.name,
            outcome,
            elapsed_ms: t.elapsed().as_secs_f64() * 1e3,
            budget_ms: check.budget.as_millis() as u64,
        };
        each(&result);
        done.push(result);
    }
    done
}

/// The check's outcome, or its panic as a failure of that check, or its failure to finish within
/// `deadline` (its thread is left to it). (The binary that ships aborts on a panic, `panic =
/// "abort"`: there a panic still ends the run.)
fn guarded(run: Run, options: &Arc<Options>, facts: &Arc<Facts>, deadline: Duration) -> Outcome {
    let (options, facts) = (options.clone(), facts.clone());
    let ran = within("the check", deadline, move || catch_unwind(AssertUnwindSafe(|| run(&options, &facts))));
    match ran {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(payload)) => Outcome::fail(
            "the check to finish",
            format!("it panicked: {}", crate::panics::message(&*payload)),
            "a bug in edgert: report it with this output (edgert doctor --json -)",
        ),
        Err(SensorError::Stuck { seconds, .. }) => Outcome::fail(
            format!("the check to finish within {seconds} s (ten times its budget)"),
            "it was still running: a read or call that does not return, such as a driver stuck on its bus",
            "see `dmesg` for the driver's errors; `--only` runs the other areas without this one",
        ),
        Err(other) => Outcome::fail("the check to run", other.to_string(), "report it with this output"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::Area;

    fn run_list(list: Vec<Check>, only: Vec<Area>) -> Vec<Done> {
        let options = Options { only, ..Options::default() };
        let facts = Facts::read(&options);
        run_checks(list, &Arc::new(options), &Arc::new(facts), Duration::from_millis(100), |_| {})
    }

    #[test]
    fn a_panic_is_that_checks_failure_and_the_next_still_runs() {
        let done = run_list(
            vec![
                Check::new(Area::Cpu, "explodes", 10, |_, _| panic!("index out of range")),
                Check::new(Area::Cpu, "fine", 10, |_, _| Outcome::pass("ok")),
            ],
            vec![],
        );
        match &done[0].outcome {
            Outcome::Fail { seen, .. } => assert!(seen.contains("index out of range"), "{seen}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(done[1].outcome, Outcome::pass("ok"));
    }

    #[test]
    fn a_check_that_does_not_finish_fails_at_ten_times_its_budget_and_the_next_still_runs() {
        let started = Instant::now();
        let done = run_list(
            vec![
                Check::new(Area::Power, "hangs", 30, |_, _| {
                    // A read that never returns: the sender lives in a thread that never ends.
                    let (keep, never) = std::sync::mpsc::channel::<()>();
                    std::mem::forget(keep);
                    let _ = never.recv();
                    Outcome::pass("unreachable")
                }),
                Check::new(Area::Power, "fine", 10, |_, _| Outcome::pass("ok")),
            ],
            vec![],
        );
        let waited = started.elapsed();
        assert!(waited >= Duration::from_millis(300) && waited < Duration::from_secs(2), "{waited:?}");
        match &done[0].outcome {
            Outcome::Fail { expected, seen, .. } => {
                assert!(expected.contains("within 0.3 s"), "{expected}");
                assert!(seen.contains("still running"), "{seen}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(done[1].outcome, Outcome::pass("ok"));
    }

    #[test]
    fn a_check_whose_prerequisite_did_not_pass_is_skipped_naming_it() {
        let done = run_list(
            vec![
                Check::new(Area::Gpu, "driver", 10, |_, _| Outcome::fail("a driver", "none", "install one")),
                Check::new(Area::Gpu, "memory", 10, |_, _| panic!("must not run")).needs("driver"),
                Check::new(Area::Gpu, "other", 10, |_, _| Outcome::pass("ran")),
            ],
            vec![],
        );
        assert_eq!(done[1].outcome, Outcome::skip("needs `gpu driver`, which did not pass"));
        assert_eq!(done[2].outcome, Outcome::pass("ran"));
    }

    #[test]
    fn only_the_areas_asked_for_run() {
        let done = run_list(
            vec![
                Check::new(Area::Cpu, "a", 10, |_, _| Outcome::pass("cpu")),
                Check::new(Area::Power, "b", 10, |_, _| panic!("must not run")),
            ],
            vec![Area::Cpu],
        );
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].area, Area::Cpu);
    }

    #[test]
    fn area_names_parse_and_an_unknown_one_lists_them() {
        assert_eq!(Area::parse("tensorrt"), Ok(Area::Tensorrt));
        let err = Area::parse("gpus").unwrap_err();
        assert!(err.contains("'gpus'") && err.contains("platform, cpu, gpu"), "{err}");
    }
}
