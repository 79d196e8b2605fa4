//! `--output dir:PATH`: each shown frame as an image, `frame-SEQUENCE.jpg` (or `.png`), written
//! whole or not at all.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::encode;
use super::uri::ImageFormat;
use super::{OutputError, Shown, Sink, Wants};
use crate::outfile;
use crate::Error;

pub struct Dir {
    path: PathBuf,
    format: ImageFormat,
    png: Vec<u8>,
}

impl Dir {
    /// Makes the folder where missing and checks that it takes files.
    pub fn open(path: &Path, format: ImageFormat) -> Result<Dir, Error> {
        let fail = |reason: String| Error::Write { path: path.to_owned(), reason };
        if path.exists() && !path.is_dir() {
            return Err(fail("is not a folder".into()));
        }
        std::fs::create_dir_all(path).map_err(|e| fail(e.to_string()))?;
        outfile::check_writable(&path.join("frame")).map_err(|e| fail(crate::error::one_line(&e)))?;
        Ok(Dir { path: path.to_owned(), format, png: Vec::new() })
    }

    pub fn file(&self, sequence: u64) -> PathBuf {
        self.path.join(format!("frame-{sequence:08}.{}", self.format.extension()))
    }
}

impl Sink for Dir {
    fn name(&self) -> String {
        format!("dir:{}", self.path.display())
    }

    fn wants(&self) -> Wants {
        match self.format {
            ImageFormat::Jpeg => Wants::Jpeg,
            ImageFormat::Png => Wants::Picture,
        }
    }

    fn write(&mut self, frame: &Shown) -> Result<(), OutputError> {
        let bytes = match self.format {
            ImageFormat::Jpeg => frame.jpeg.ok_or(OutputError::Missing("JPEG"))?,
            ImageFormat::Png => {
                encode::png(frame.picture()?, &mut self.png)?;
                &self.png
            }
        };
        let path = self.file(frame.sequence);
        outfile::write_atomically(&path, |w| w.write_all(bytes))
            .map_err(|source| OutputError::Io { path, source })
    }
}
