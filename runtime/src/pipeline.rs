//! One model on one backend, end to end: preprocess → inference → postprocess. `run` and `bench`
//! both drive it, so what is benchmarked is what runs.

use image::DynamicImage;

use crate::backend::finite::Finite;
use crate::backend::{PrepareOptions, Prepared, Selected, Session};
use crate::frame::PixelFormat;
use crate::model::Model;
use crate::postprocess::{Postprocessor, Prediction};
use crate::preprocess::plan::FramePlan;
use crate::preprocess::{Geometry, Preprocessor};
use crate::tensor::HostTensor;
use crate::{Error, Result};

/// One sample of input: a decoded image, or a tensor item for non-image models.
#[derive(Clone, Copy)]
pub enum Sample<'a> {
    Image(&'a DynamicImage),
    Tensor(&'a [f32]),
}

pub struct Pipeline {
    pub model: Model,
    pub backend: String,
    /// What runs underneath the backend (`Backend::version`).
    pub backend_version: Option<String>,
    pub requested_backend: String,
    /// Set when `gpu-or-cpu` ran on the CPU, with the reason.
    pub fallback: Option<String>,
    pub options: PrepareOptions,
    prepared: Box<dyn Prepared>,
    session: Box<dyn Session>,
    preprocessor: Result<Preprocessor>,
    postprocessor: Postprocessor,
}

impl Pipeline {
    pub fn open(model: Model, selected: Selected, options: PrepareOptions) -> Result<Pipeline> {
        if model.is_engine() && selected.backend.name() != "tensorrt" {
            let reason = format!(
                "{} is a TensorRT engine: run it with --backend tensorrt, not {}",
                model.file.display(),
                selected.backend.name()
            );
            return Err(Error::input(model.source_path(), reason));
        }
        model.check_input_memory(options.batch, options.memory)?;
        let prepared = selected.backend.prepare(&model, &options)?;
        let names = prepared.outputs().iter().map(|o| o.name.clone()).collect();
        let session = Box::new(Finite::new(prepared.spawn()?, model.file.clone(), names));
        // Kept as the reason, so a non-image model fails only when given an image.
        let preprocessor = Preprocessor::for_model(&model);
        let postprocessor = Postprocessor::new(&model, prepared.outputs(), options.memory)?;
        Ok(Pipeline {
            backend: selected.backend.name().to_string(),
            backend_version: selected.backend.version(),
            requested_backend: selected.requested,
            fallback: selected.fallback,
            model,
            options,
            prepared,
            session,
            preprocessor,
            postprocessor,
        })
    }

    pub fn prepared(&self) -> &dyn Prepared {
        self.prepared.as_ref()
    }

    /// Fills a batch from samples (cycled if fewer than the batch); the geometry of each image.
    pub fn preprocess(&self, samples: &[Sample]) -> Result<(HostTensor, Vec<Option<Geometry>>)> {
        let batch = self.options.batch;
        let mut tensor = HostTensor::zeros(&self.model.input_shape(batch));
        let item_len = tensor.item_len();
        let mut geometries = Vec::with_capacity(batch);
        for (i, item) in tensor.data.chunks_mut(item_len).enumerate() {
            let sample = &samples[i % samples.len()];
            geometries.push(match sample {
                Sample::Tensor(values) => {
                    if values.len() != item_len {
                        return Err(Error::Usage(format!(
                            "input item has {} values, the model wants {item_len}",
                            values.len()
                        )));
                    }
                    item.copy_from_slice(values);
                    None
                }
                Sample::Image(image) => {
                    let pre =
                        self.preprocessor.as_ref().map_err(|reason| Error::Usage(reason.to_string()))?;
                    Some(
                        pre.run_image(image, item)
                            .map_err(|reason| Error::manifest(self.model.source_path(), reason))?,
                    )
                }
            });
        }
        Ok((tensor, geometries))
    }

    pub fn infer(&mut self, input: &HostTensor) -> Result<Vec<HostTensor>> {
        self.session.run(input)
    }

    /// Where the last inference spent its time on a GPU backend.
    pub fn device_timing(&self) -> Option<crate::backend::DeviceTiming> {
        self.session.device_timing()
    }

    /// One prediction per batch item.
    pub fn postprocess(
        &self,
        outputs: &[HostTensor],
        geometries: &[Option<Geometry>],
    ) -> Result<Vec<Prediction>> {
        geometries
            .iter()
            .enumerate()
            .map(|(item, g)| self.postprocessor.run(&self.model, outputs, item, g.as_ref()))
            .collect()
    }

    /// The preprocessing plan from `width`×`height` frames of `format` into this model's input.
    pub fn frame_preprocess(&self, format: PixelFormat, width: usize, height: usize) -> Result<FramePlan> {
        let pre = self.preprocessor.as_ref().map_err(|reason| Error::Usage(reason.to_string()))?;
        pre.plan(format, width, height).map_err(|reason| Error::manifest(self.model.source_path(), reason))
    }

    /// Inference and postprocessing borrowed apart, so each can run on its own thread.
    pub fn split(&mut self) -> (&mut dyn Session, Postprocess<'_>) {
        (self.session.as_mut(), Postprocess { model: &self.model, postprocessor: &self.postprocessor })
    }

    /// All three stages for one sample (the batch filled with copies of it); its prediction.
    pub fn predict(&mut self, sample: Sample) -> Result<Prediction> {
        Ok(self.predict_with_outputs(sample)?.0)
    }

    /// A prediction and the model's outputs it came from, whole: those of the sample's batch item
    /// where the plan runs a larger batch.
    pub fn predict_with_outputs(&mut self, sample: Sample) -> Result<(Prediction, Vec<HostTensor>)> {
        let (input, geometries) = self.preprocess(&[sample])?;
        let outputs = self.infer(&input)?;
        let prediction = self.postprocess(&outputs, &geometries[..1])?.remove(0);
        let batch = self.options.batch;
        let first_item = |t: HostTensor| match t.shape.first() {
            Some(&n) if batch > 1 && n == batch => {
                let shape = [&[1][..], &t.shape[1..]].concat();
                HostTensor::new(shape, t.item(0).to_vec())
            }
            _ => t,
        };
        Ok((prediction, outputs.into_iter().map(first_item).collect()))
    }
}

/// The postprocessing stage on its own.
pub struct Postprocess<'a> {
    model: &'a Model,
    postprocessor: &'a Postprocessor,
}

impl Postprocess<'_> {
    /// The prediction for batch `item`.
    pub fn run(&self, outputs: &[HostTensor], item: usize, geometry: &Geometry) -> Result<Prediction> {
        self.postprocessor.run(self.model, outputs, item, Some(geometry))
    }
}
