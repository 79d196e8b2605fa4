//! Validation data: an `.npz` with `x` (and `y` labels), or a folder of images labelled by
//! sub-folder names or by a CSV (`file,label`, label a class id or name).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::capture::{self, npz::TensorSet};
use crate::model::Model;
use crate::{Error, Result};

/// A label as written: a class id, or a class name to look up in the model's labels.
#[derive(Debug, Clone, PartialEq)]
pub enum Label {
    Id(i64),
    Name(String),
}

#[derive(Debug)]
pub enum Samples {
    Tensors(TensorSet),
    Images(Vec<(PathBuf, Option<Label>)>),
}

#[derive(Debug)]
pub struct Dataset {
    pub path: PathBuf,
    pub items: Samples,
}

impl Dataset {
    /// Loads a dataset; tensors must fit `model`'s input.
    pub fn load(path: &Path, model: &Model, labels_csv: Option<&Path>) -> Result<Dataset> {
        let items = if capture::is_npz(path) {
            if let Some(csv) = labels_csv {
                let reason = format!(
                    "--labels-csv {} labels image folders; an .npz's labels are its 'y'",
                    csv.display()
                );
                return Err(Error::input(path, reason));
            }
            Samples::Tensors(capture::npz::load(path, &model.manifest.input.shape[1..])?)
        } else {
            Samples::Images(image_items(path, labels_csv)?)
        };
        Ok(Dataset { path: path.to_owned(), items })
    }

    pub fn len(&self) -> usize {
        match &self.items {
            Samples::Tensors(set) => set.len(),
            Samples::Images(images) => images.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether every item has a label.
    pub fn labelled(&self) -> bool {
        match &self.items {
            Samples::Tensors(set) => set.labels.is_some(),
            Samples::Images(images) => !images.is_empty() && images.iter().all(|(_, l)| l.is_some()),
        }
    }

    pub fn name(&self, index: usize) -> String {
        match &self.items {
            Samples::Tensors(_) => format!("{}#{index}", self.path.display()),
            Samples::Images(images) => images[index].0.display().to_string(),
        }
    }

    /// The class id of item `index`, names resolved against `model`'s labels.
    pub fn label(&self, index: usize, model: &Model) -> Result<Option<usize>> {
        let label = match &self.items {
            Samples::Tensors(set) => set.labels.as_ref().map(|l| Label::Id(l[index])),
            Samples::Images(images) => images[index].1.clone(),
        };
        match label {
            None => Ok(None),
            Some(Label::Id(id)) => model
                .class_id(id)
                .map(Some)
                .map_err(|reason| Error::input(Path::new(&self.name(index)), reason)),
            Some(Label::Name(name)) => {
                let names = model.labels.as_deref().unwrap_or_default();
                let id = names.iter().position(|n| n.eq_ignore_ascii_case(&name)).ok_or_else(|| {
                    Error::input(
                        &self.path,
                        format!("label '{name}' is not a class of {}", model.source_path().display()),
                    )
                })?;
                Ok(Some(id))
            }
        }
    }
}

fn parse_label(text: &str) -> Label {
    text.trim().parse().map(Label::Id).unwrap_or_else(|_| Label::Name(text.trim().to_string()))
}

/// Images of a folder: labelled by sub-folder when it has sub-folders, else by the CSV if any.
fn image_items(path: &Path, labels_csv: Option<&Path>) -> Result<Vec<(PathBuf, Option<Label>)>> {
    let meta = std::fs::metadata(path).map_err(|e| Error::read(path, e))?;
    if !meta.is_dir() {
        return Ok(vec![(path.to_owned(), None)]);
    }
    let mut folders: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| Error::read(path, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    folders.sort();
    if !folders.is_empty() {
        let mut items = Vec::new();
        for folder in folders {
            let label = folder.file_name().map(|n| parse_label(&n.to_string_lossy()));
            items.extend(capture::list_images(&folder)?.into_iter().map(|f| (f, label.clone())));
        }
        return Ok(items);
    }
    let csv = labels_csv.map(Path::to_owned).or_else(|| Some(path.join("labels.csv")).filter(|p| p.exists()));
    let labels = csv.map(|c| read_csv(&c)).transpose()?.unwrap_or_default();
    Ok(capture::list_images(path)?
        .into_iter()
        .map(|f| {
            let key = f.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let label = labels.get(&key).cloned();
            (f, label)
        })
        .collect())
}

/// `file,label` rows (a header row is skipped when its label is `label`).
fn read_csv(path: &Path) -> Result<HashMap<String, Label>> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_path(path)
        .map_err(|e| Error::read(path, e))?;
    let mut labels = HashMap::new();
    for (line, record) in reader.records().enumerate() {
        let record = record.map_err(|e| Error::input(path, format!("line {}: {e}", line + 1)))?;
        let (Some(file), Some(label)) = (record.get(0), record.get(1)) else {
            return Err(Error::input(path, format!("line {}: expected file,label", line + 1)));
        };
        if line == 0 && label.trim() == "label" {
            continue;
        }
        labels.insert(file.trim().to_string(), parse_label(label));
    }
    Ok(labels)
}
