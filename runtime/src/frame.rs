//! Raw frames in the pixel formats V4L2 cameras, recordings and decoded images give: the words every
//! floor shares (sources make frames, preprocessing reads them, recordings store them).

/// The largest frame side (V4L2's own bound), and so the largest side a recipe may scale to.
pub const MAX_SIDE: usize = 16384;

/// A frame's pixel layout in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PixelFormat {
    /// 4:2:2 packed: Y0 U Y1 V per two pixels.
    Yuyv,
    /// 4:2:0: a Y plane, then a plane of interleaved U V at half resolution both ways.
    Nv12,
    Grey,
    Rgb24,
    Bgr24,
}

impl PixelFormat {
    pub const ALL: [PixelFormat; 5] =
        [PixelFormat::Yuyv, PixelFormat::Nv12, PixelFormat::Grey, PixelFormat::Rgb24, PixelFormat::Bgr24];

    /// The name in URIs, recordings and reports (V4L2's, lower case).
    pub fn name(self) -> &'static str {
        match self {
            PixelFormat::Yuyv => "yuyv",
            PixelFormat::Nv12 => "nv12",
            PixelFormat::Grey => "grey",
            PixelFormat::Rgb24 => "rgb24",
            PixelFormat::Bgr24 => "bgr24",
        }
    }

    pub fn from_name(name: &str) -> Option<PixelFormat> {
        let name = name.to_ascii_lowercase();
        let alias = match name.as_str() {
            "gray" => "grey",
            "rgb" => "rgb24",
            "bgr" => "bgr24",
            other => other,
        };
        PixelFormat::ALL.into_iter().find(|f| f.name() == alias)
    }

    /// Bytes a frame of this size needs, with rows `stride` bytes apart (Y rows for NV12).
    pub fn frame_bytes(self, stride: usize, height: usize) -> usize {
        match self {
            PixelFormat::Nv12 => stride * height + stride * height.div_ceil(2),
            _ => stride * height,
        }
    }

    /// The smallest stride of a row of `width` pixels.
    pub fn min_stride(self, width: usize) -> usize {
        match self {
            PixelFormat::Yuyv => width * 2,
            PixelFormat::Nv12 | PixelFormat::Grey => width,
            PixelFormat::Rgb24 | PixelFormat::Bgr24 => width * 3,
        }
    }
}

/// Why bytes cannot be a frame of the format and size given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("a {width}x{height} frame has no pixels")]
    Empty { width: usize, height: usize },
    #[error("{format:?} needs even sides, the frame is {width}x{height}")]
    OddSides { format: PixelFormat, width: usize, height: usize },
    #[error("a {width}x{height} frame of stride {stride} is over {MAX_SIDE} pixels a side or cannot fit in memory")]
    TooLarge { width: usize, height: usize, stride: usize },
    #[error("stride {stride} is less than a {format:?} row of {width} pixels")]
    ShortStride { format: PixelFormat, width: usize, stride: usize },
    #[error("{format:?} {width}x{height} needs {needed} bytes, the frame has {given}")]
    ShortData { format: PixelFormat, width: usize, height: usize, needed: usize, given: usize },
}

/// A frame borrowed from a capture buffer.
#[derive(Debug, Clone, Copy)]
pub struct Frame<'a> {
    pub format: PixelFormat,
    pub width: usize,
    pub height: usize,
    /// Bytes from one row to the next (drivers may pad rows).
    pub stride: usize,
    pub data: &'a [u8],
}

impl<'a> Frame<'a> {
    /// Checks the size against the format: YUYV needs an even width, NV12 even sides.
    pub fn new(
        format: PixelFormat,
        width: usize,
        height: usize,
        stride: usize,
        data: &'a [u8],
    ) -> Result<Frame<'a>, FrameError> {
        Frame::check_layout(format, width, height, stride)?;
        let needed = format.frame_bytes(stride, height);
        if data.len() < needed {
            return Err(FrameError::ShortData { format, width, height, needed, given: data.len() });
        }
        Ok(Frame { format, width, height, stride, data })
    }

    /// The checks of `new` that need no pixels: whether frames of this format, size and stride
    /// can exist at all (a recording's index, a driver's format).
    pub fn check_layout(
        format: PixelFormat,
        width: usize,
        height: usize,
        stride: usize,
    ) -> Result<(), FrameError> {
        if width == 0 || height == 0 {
            return Err(FrameError::Empty { width, height });
        }
        let odd = match format {
            PixelFormat::Yuyv => !width.is_multiple_of(2),
            PixelFormat::Nv12 => !width.is_multiple_of(2) || !height.is_multiple_of(2),
            _ => false,
        };
        if odd {
            return Err(FrameError::OddSides { format, width, height });
        }
        // V4L2's own bound on frame sides; past it `min_stride` would overflow. NV12's frames are
        // the largest: 1.5 rows of stride per pixel row.
        if width > MAX_SIDE
            || height > MAX_SIDE
            || height.checked_mul(2).and_then(|rows| rows.checked_mul(stride)).is_none()
        {
            return Err(FrameError::TooLarge { width, height, stride });
        }
        if stride < format.min_stride(width) {
            return Err(FrameError::ShortStride { format, width, stride });
        }
        Ok(())
    }
}
