//! Recordings of raw frames, so frames captured on a board replay anywhere: `DIR/frames.raw` holds
//! the frames' bytes back to back, `DIR/frames.json` (schema `edgert.recording/1`) their format,
//! size, stride, sequence numbers and timestamps. An MJPEG camera's frames are kept as the JPEGs
//! it sent (format `mjpeg`, each entry with its length), so a replay decodes them as a live run
//! does.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Captured, SourceInfo};
use crate::frame::PixelFormat;
use crate::{Error, Result};

pub const SCHEMA: &str = "edgert.recording/1";
const INDEX: &str = "frames.json";
const RAW: &str = "frames.raw";
/// The frames and the index while they are written: renamed to `RAW` and `INDEX` by `finish`,
/// removed if it never comes, so a recording already in the folder stays whole.
const PARTIAL: &str = "frames.raw.partial";
const INDEX_PARTIAL: &str = "frames.json.partial";
/// The index's format for frames kept as JPEGs.
pub const MJPEG: &str = "mjpeg";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Index {
    pub schema: String,
    /// The URI the frames came from.
    pub source: String,
    pub format: String,
    pub width: usize,
    pub height: usize,
    pub stride: usize,
    pub frames: Vec<FrameEntry>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FrameEntry {
    pub sequence: u64,
    /// From the source's start, in nanoseconds.
    pub timestamp_ns: u64,
    pub offset: u64,
    /// Bytes, for formats whose frames vary in size (MJPEG).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub length: Option<u64>,
}

/// Whether a folder holds a recording.
pub fn is_recording(dir: &Path) -> bool {
    dir.join(INDEX).is_file()
}

/// Writes a recording whole or not at all: the frames go to `PARTIAL` until `finish` renames them
/// and writes the index; a writer dropped before that (an error, a full disk) removes them.
pub struct Writer {
    dir: PathBuf,
    raw: BufWriter<File>,
    finished: bool,
    index: Index,
    offset: u64,
    frame_bytes: usize,
}

impl Writer {
    pub fn create(dir: &Path, info: &SourceInfo) -> Result<Writer> {
        let write_error =
            |path: &Path, e: std::io::Error| Error::Write { path: path.to_owned(), reason: e.to_string() };
        std::fs::create_dir_all(dir).map_err(|e| write_error(dir, e))?;
        let raw_path = dir.join(PARTIAL);
        let raw = File::create(&raw_path).map_err(|e| write_error(&raw_path, e))?;
        let index = Index {
            schema: SCHEMA.into(),
            source: info.uri.clone(),
            format: info.format.name().into(),
            width: info.width,
            height: info.height,
            stride: info.stride,
            frames: Vec::new(),
        };
        let frame_bytes = info.format.frame_bytes(info.stride, info.height);
        let raw = BufWriter::new(raw);
        Ok(Writer { dir: dir.to_owned(), raw, finished: false, index, offset: 0, frame_bytes })
    }

    /// Appends a frame: the JPEG it came as where there is one (then every frame must have one),
    /// else its pixels.
    pub fn push(&mut self, captured: &Captured) -> Result<()> {
        if self.index.frames.is_empty() && captured.encoded.is_some() {
            self.index.format = MJPEG.into();
        }
        let encoded = self.index.format == MJPEG;
        let bytes = match captured.encoded {
            Some(jpeg) if encoded => jpeg,
            None if !encoded => &captured.frame.data[..self.frame_bytes],
            _ => {
                let reason = "the source gave some frames as JPEGs and some not".to_string();
                return Err(Error::Write { path: self.dir.join(RAW), reason });
            }
        };
        self.raw.write_all(bytes).map_err(|e| self.error(PARTIAL, e))?;
        self.index.frames.push(FrameEntry {
            sequence: captured.sequence,
            timestamp_ns: captured.timestamp.as_nanos() as u64,
            offset: self.offset,
            length: encoded.then_some(bytes.len() as u64),
        });
        self.offset += bytes.len() as u64;
        Ok(())
    }

    /// Flushes the frames and writes the index; a recording without its index is not one.
    pub fn finish(mut self) -> Result<Index> {
        self.raw.flush().map_err(|e| self.error(PARTIAL, e))?;
        let json = serde_json::to_string_pretty(&self.index).expect("the index serializes");
        crate::outfile::write_atomically(&self.dir.join(INDEX_PARTIAL), |file| writeln!(file, "{json}"))
            .map_err(|e| self.error(INDEX, e))?;
        // Renames take no space: past the writes above, nothing but the folder vanishing stops them.
        for (from, to) in [(PARTIAL, RAW), (INDEX_PARTIAL, INDEX)] {
            std::fs::rename(self.dir.join(from), self.dir.join(to)).map_err(|e| self.error(to, e))?;
        }
        self.finished = true;
        Ok(self.index.clone())
    }

    fn error(&self, name: &str, e: std::io::Error) -> Error {
        Error::Write { path: self.dir.join(name), reason: e.to_string() }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        if !self.finished {
            let _ = std::fs::remove_file(self.dir.join(PARTIAL));
            let _ = std::fs::remove_file(self.dir.join(INDEX_PARTIAL));
        }
    }
}

/// A recording opened for replay, checked whole before the first frame: a truncated or
/// inconsistent recording is an error naming the file, never a short read later.
pub struct Reader {
    pub index: Index,
    /// The frames' format once read (MJPEG frames decode to RGB24).
    pub format: PixelFormat,
    /// Whether frames are JPEGs to decode.
    pub encoded: bool,
    /// Bytes of a frame (a raw one; JPEGs have their own lengths).
    pub frame_bytes: usize,
    raw: File,
    pub raw_path: PathBuf,
}

impl Reader {
    pub fn open(dir: &Path) -> Result<Reader> {
        let index_path = dir.join(INDEX);
        let text = crate::infile::read_to_string(&index_path, crate::infile::TEXT)?;
        let index: Index = serde_json::from_str(&text)
            .map_err(|e| Error::input(&index_path, format!("not a recording index: {e}")))?;
        if index.schema != SCHEMA {
            return Err(Error::input(&index_path, format!("schema '{}' is not {SCHEMA}", index.schema)));
        }
        let encoded = index.format == MJPEG;
        let named = if encoded { Some(PixelFormat::Rgb24) } else { PixelFormat::from_name(&index.format) };
        let format = named
            .ok_or_else(|| Error::input(&index_path, format!("unknown pixel format '{}'", index.format)))?;
        crate::frame::Frame::check_layout(format, index.width, index.height, index.stride)
            .map_err(|e| Error::input(&index_path, e))?;
        let rows = format.min_stride(index.width);
        if encoded && index.stride != rows {
            let reason = format!(
                "stride {} is not an MJPEG recording's: its frames decode to rows of {rows} bytes",
                index.stride
            );
            return Err(Error::input(&index_path, reason));
        }
        if index.frames.is_empty() {
            return Err(Error::input(&index_path, "the recording has no frames"));
        }
        let raw_path = dir.join(RAW);
        let raw = crate::infile::open(&raw_path, crate::infile::STREAMED)?;
        let raw_len = raw.metadata().map_err(|e| Error::read(&raw_path, e))?.len();
        let frame_bytes = format.frame_bytes(index.stride, index.height);
        for (i, entry) in index.frames.iter().enumerate() {
            if i > 0 && entry.timestamp_ns < index.frames[i - 1].timestamp_ns {
                return Err(Error::input(
                    &index_path,
                    format!("frame {i}'s timestamp is earlier than frame {}'s", i - 1),
                ));
            }
            let length = match entry.length {
                Some(length) if encoded || length == frame_bytes as u64 => length,
                Some(length) => {
                    let reason = format!(
                        "frame {i} has {length} bytes; a {} frame of this size has {frame_bytes}",
                        index.format
                    );
                    return Err(Error::input(&index_path, reason));
                }
                None if !encoded => frame_bytes as u64,
                None => return Err(Error::input(&index_path, format!("MJPEG frame {i} has no length"))),
            };
            // An index's numbers may be anything: past the end, or past u64.
            let end = entry.offset.saturating_add(length);
            if end > raw_len {
                return Err(Error::input(
                    &raw_path,
                    format!("truncated: frame {i} ends at byte {end}, the file has {raw_len}"),
                ));
            }
        }
        Ok(Reader { index, format, encoded, frame_bytes, raw, raw_path })
    }

    /// How far a loop of the recording moves the timestamps on: from the first frame to the last,
    /// plus one mean frame period (timestamps were checked to increase when opened).
    pub fn loop_length_ns(&self) -> u64 {
        let frames = &self.index.frames;
        let span = frames[frames.len() - 1].timestamp_ns - frames[0].timestamp_ns;
        span + if frames.len() > 1 { span / (frames.len() as u64 - 1) } else { 0 }
    }

    /// Reads frame `i` into `buffer` (resized to the frame's bytes: once, for raw frames).
    pub fn read(&mut self, i: usize, buffer: &mut Vec<u8>) -> Result<()> {
        let FrameEntry { offset, length, .. } = self.index.frames[i];
        buffer.resize(length.map_or(self.frame_bytes, |n| n as usize), 0);
        self.raw
            .seek(SeekFrom::Start(offset))
            .and_then(|_| self.raw.read_exact(buffer))
            .map_err(|e| Error::read(&self.raw_path, format!("frame {i}: {e}")))
    }
}
