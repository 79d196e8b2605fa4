//! `edgert report`: bench reports read back and put side by side, across boards and runs: one
//! merged table, a before/after comparison that knows the runs' own noise, and plots.

pub mod compare;
pub(crate) mod doctor;
pub mod merge;
pub mod plot;
pub mod read;

pub use merge::{read_for_merge, Merged};
pub use read::{read_all, BenchFile, Run};
