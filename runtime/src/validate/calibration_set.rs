//! A data set read as TensorRT's calibrator takes it (feature `tensorrt`): an `.npz` of the model's
//! inputs, or images through the manifest's preprocessing, one item at a time.

use std::path::Path;

use sha2::{Digest, Sha256};

use super::data::{Dataset, Samples};
use crate::backend::tensorrt::CalibrationSet;
use crate::capture;
use crate::model::Model;
use crate::preprocess::Preprocessor;
use crate::{Error, Result};

#[derive(Debug)]
pub struct CalibrationData {
    data: Dataset,
    /// For images; `None` for an `.npz`, whose items already are inputs.
    preprocessor: Option<Preprocessor>,
}

impl CalibrationData {
    /// The set at `path` for `model`: its `.npz` items must fit the model's input.
    pub fn open(model: &Model, path: &Path) -> Result<CalibrationData> {
        let data = Dataset::load(path, model, None)?;
        let preprocessor = match data.items {
            Samples::Images(_) => Some(Preprocessor::for_model(model)?),
            Samples::Tensors(_) => None,
        };
        Ok(CalibrationData { data, preprocessor })
    }
}

impl CalibrationSet for CalibrationData {
    fn path(&self) -> &Path {
        &self.data.path
    }

    fn len(&self) -> usize {
        self.data.len()
    }

    fn digest(&self) -> Result<String> {
        let files = match &self.data.items {
            Samples::Tensors(_) => vec![self.data.path.clone()],
            Samples::Images(images) => images.iter().map(|(path, _)| path.clone()).collect(),
        };
        let mut hasher = Sha256::new();
        for file in files {
            hasher.update(crate::infile::read(&file, crate::infile::TENSORS)?);
        }
        Ok(hasher.finalize().iter().map(|b| format!("{b:02x}")).collect())
    }

    fn item(&self, index: usize, out: &mut [f32]) -> Result<()> {
        match (&self.data.items, &self.preprocessor) {
            (Samples::Tensors(set), _) => out.copy_from_slice(set.item(index)),
            (Samples::Images(images), Some(preprocessor)) => {
                let path = &images[index].0;
                let image = capture::load_image(path)?;
                preprocessor.run_image(&image, out).map_err(|reason| Error::input(path, reason))?;
            }
            (Samples::Images(_), None) => unreachable!("`open` makes a preprocessor for images"),
        }
        Ok(())
    }
}
