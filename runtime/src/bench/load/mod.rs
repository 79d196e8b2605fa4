//! Latency under load: queries arrive on a schedule (Poisson, replayed, periodic or all at once),
//! a dynamic batcher groups them over inference workers, and each query's latency runs from its
//! scheduled arrival. The scenarios of `bench --scenario` are built from these parts.

pub mod arrivals;
pub mod peak;
pub(crate) mod scheduler;
pub(crate) mod tail;

pub use scheduler::{serve, Batching, Query, Served, StageTimes, Worker};
