//! A session whose outputs are checked for NaN and infinity before anyone reads them: a model
//! that makes them has given no answer, and a class or a box scored from them would be wrong
//! without a sign (the top-1 of all-NaN scores is class 0).

use std::path::PathBuf;

use super::{DeviceBatch, DeviceTiming, Session};
use crate::tensor::{Batch, HostTensor};
use crate::{Error, Result};

pub struct Finite {
    inner: Box<dyn Session>,
    path: PathBuf,
    /// Output names, in `Prepared::outputs`' order.
    names: Vec<String>,
}

impl Finite {
    pub fn new(inner: Box<dyn Session>, path: PathBuf, names: Vec<String>) -> Finite {
        Finite { inner, path, names }
    }

    fn check(&self, outputs: Vec<HostTensor>) -> Result<Vec<HostTensor>> {
        for (i, tensor) in outputs.iter().enumerate() {
            if let Some(at) = tensor.data.iter().position(|v| !v.is_finite()) {
                let name = self.names.get(i).map_or_else(|| format!("#{i}"), |n| format!("'{n}'"));
                let reason = format!("output {name} holds {} (value {at})", tensor.data[at]);
                return Err(Error::Inference { path: self.path.clone(), reason });
            }
        }
        Ok(outputs)
    }
}

impl Session for Finite {
    fn run_batch(&mut self, input: Batch) -> Result<Vec<HostTensor>> {
        let outputs = self.inner.run_batch(input)?;
        self.check(outputs)
    }

    fn device_timing(&self) -> Option<DeviceTiming> {
        self.inner.device_timing()
    }

    fn takes_device_input(&self) -> bool {
        self.inner.takes_device_input()
    }

    fn run_on_device(&mut self, input: &DeviceBatch) -> Result<Vec<HostTensor>> {
        let outputs = self.inner.run_on_device(input)?;
        self.check(outputs)
    }
}
