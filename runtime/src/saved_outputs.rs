//! `run --save-outputs DIR`: every output of each input, whole, as one `.npz` per input (what
//! numpy's `savez` writes: one stored `NAME.npy` per output, named as the model names it), so
//! edgert's numbers can be compared with any other runtime's.

use std::io::{Cursor, Write};
use std::path::{Path, PathBuf};

use npyz::WriterBuilder;
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

use crate::outfile;
use crate::tensor::HostTensor;
use crate::{Error, Result};

/// Where the outputs of an input go, under `dir`: an image `a/b.png` of a folder input as
/// `dir/a/b.png.npz` (the folder's layout kept), a single image as `dir/b.png.npz`, sample `i` of
/// a tensor set `set.npz` as `dir/set/i.npz`.
pub fn path_for(dir: &Path, input: &Path, file: &Path, sample: Option<usize>) -> PathBuf {
    let name = |p: &Path| p.file_name().map(PathBuf::from).unwrap_or_else(|| PathBuf::from("input"));
    match sample {
        Some(i) => dir
            .join(input.file_stem().map(PathBuf::from).unwrap_or_else(|| "set".into()))
            .join(format!("{i}.npz")),
        None => {
            let relative = file.strip_prefix(input).ok().filter(|r| !r.as_os_str().is_empty());
            let mut path = dir.join(relative.map(Path::to_path_buf).unwrap_or_else(|| name(file)));
            path.as_mut_os_string().push(".npz");
            path
        }
    }
}

/// Makes `dir` where it is missing and checks that it takes files, before anything runs.
pub fn check_folder(dir: &Path) -> Result<()> {
    let fail = |reason: String| Error::Write { path: dir.to_owned(), reason };
    if dir.exists() && !dir.is_dir() {
        return Err(fail("not a folder".into()));
    }
    std::fs::create_dir_all(dir).map_err(|e| fail(e.to_string()))?;
    outfile::check_writable(&dir.join("edgert-outputs")).map_err(|_| fail("cannot create files in it".into()))
}

/// Writes `outputs` (named by `names`, in the model's order) to `path`, whole or not at all.
pub fn write(path: &Path, names: &[String], outputs: &[HostTensor]) -> Result<()> {
    let fail = |reason: String| Error::Write { path: path.to_owned(), reason };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| fail(e.to_string()))?;
    }
    let mut arrays = Vec::with_capacity(outputs.len());
    for (k, output) in outputs.iter().enumerate() {
        let name = names.get(k).filter(|n| !n.is_empty()).cloned().unwrap_or_else(|| format!("output_{k}"));
        arrays.push((name, npy(output).map_err(|e| fail(e.to_string()))?));
    }
    // The archive is made in memory, then written: a ZipWriter dropped after a failed write (a
    // full disk) prints its own message, which would come before edgert's one line.
    let mut zip = ZipWriter::new(Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default().compression_method(CompressionMethod::Stored);
    for (name, bytes) in &arrays {
        zip.start_file(format!("{name}.npy"), options).map_err(|e| fail(e.to_string()))?;
        zip.write_all(bytes).map_err(|e| fail(e.to_string()))?;
    }
    let archive = zip.finish().map_err(|e| fail(e.to_string()))?.into_inner();
    outfile::write_atomically(path, |file| file.write_all(&archive)).map_err(|e| fail(e.to_string()))
}

/// One f32 array in `.npy` form.
fn npy(tensor: &HostTensor) -> std::io::Result<Vec<u8>> {
    let shape: Vec<u64> = tensor.shape.iter().map(|&d| d as u64).collect();
    let mut bytes = Cursor::new(Vec::new());
    let mut writer =
        npyz::WriteOptions::<f32>::new().default_dtype().shape(&shape).writer(&mut bytes).begin_nd()?;
    writer.extend(tensor.data.iter().copied())?;
    writer.finish()?;
    Ok(bytes.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_mirror_the_inputs() {
        let dir = Path::new("out");
        assert_eq!(
            path_for(dir, Path::new("photos"), Path::new("photos/cats/a.png"), None),
            Path::new("out/cats/a.png.npz")
        );
        assert_eq!(
            path_for(dir, Path::new("x/a.jpg"), Path::new("x/a.jpg"), None),
            Path::new("out/a.jpg.npz")
        );
        assert_eq!(
            path_for(dir, Path::new("d/test.npz"), Path::new("d/test.npz"), Some(7)),
            Path::new("out/test/7.npz")
        );
    }
}
