//! An inference worker of the query scenarios: one pipeline (its own session) per batch size it
//! may be given, since a pipeline runs the batch it was compiled for.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::backend::{self, DeviceTiming, Pinning, PrepareOptions};
use crate::bench::load::{StageTimes, Worker};
use crate::bench::{iterate, pinned_cpus, BenchConfig};
use crate::model::Model;
use crate::pipeline::{Pipeline, Sample};
use crate::Result;

pub struct PipelineWorker<'a> {
    pipelines: BTreeMap<usize, Pipeline>,
    samples: &'a [Sample<'a>],
    cursor: usize,
    /// GPU stage times of every batch served, for the report's device stages.
    pub device: Vec<DeviceTiming>,
}

impl<'a> PipelineWorker<'a> {
    /// A pipeline for each of `sizes`, on the configured backend; the `index`th worker's threads
    /// pinned to CPUs of their own, after those of the workers before it (`pinned_cpus`).
    pub fn open(
        index: usize,
        model: &Model,
        config: &BenchConfig,
        sizes: &[usize],
        samples: &'a [Sample<'a>],
    ) -> Result<Self> {
        let pinning = match pinned_cpus(config) {
            Some(_) => config.prepare.pinning.after(index * config.prepare.threads),
            None => Pinning::Off,
        };
        let mut pipelines = BTreeMap::new();
        for &batch in sizes {
            let selected = backend::select_with(&config.backend, &config.backend_options)?;
            let options = PrepareOptions { batch, pinning, ..config.prepare };
            pipelines.insert(batch, Pipeline::open(model.clone(), selected, options)?);
        }
        Ok(PipelineWorker { pipelines, samples, cursor: 0, device: Vec::new() })
    }

    /// Any of its pipelines, for what they have in common (the backend's name and version).
    pub fn pipeline(&self) -> &Pipeline {
        self.pipelines.values().next().expect("a worker has a pipeline")
    }

    /// Runs each pipeline in turn for `duration` in all (at least once each): the latency of the
    /// very first run, and the mean time of one batch of each size after it.
    pub fn warm(&mut self, duration: Duration, stop: &AtomicBool) -> Result<Warmed> {
        let mut first = None;
        let mut mean = BTreeMap::new();
        let share = duration / self.pipelines.len() as u32;
        for (&size, pipeline) in &mut self.pipelines {
            let started = Instant::now();
            let mut runs = 0u32;
            while runs == 0 || (started.elapsed() < share && !stop.load(Ordering::Relaxed)) {
                let it = iterate(pipeline, self.samples, &mut self.cursor)?;
                first.get_or_insert(it.preprocess + it.inference + it.postprocess);
                runs += 1;
            }
            mean.insert(size, started.elapsed() / runs);
        }
        Ok(Warmed { first: first.expect("a pipeline ran"), mean })
    }
}

pub struct Warmed {
    /// The first batch run, cold.
    pub first: Duration,
    /// One batch of each size, on average over the warm-up (its first run included).
    pub mean: BTreeMap<usize, Duration>,
}

impl Worker for PipelineWorker<'_> {
    fn serve(&mut self, samples: usize) -> Result<StageTimes> {
        let pipeline = self.pipelines.get_mut(&samples).unwrap_or_else(|| {
            panic!(
                "no pipeline for a batch of {samples}: the scheduler forms batches the worker was opened for"
            )
        });
        let it = iterate(pipeline, self.samples, &mut self.cursor)?;
        self.device.extend(it.device);
        Ok(StageTimes { preprocess: it.preprocess, inference: it.inference, postprocess: it.postprocess })
    }
}
