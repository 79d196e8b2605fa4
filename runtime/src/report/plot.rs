//! `report plot`: one SVG with the end-to-end latency CDF of every run overlaid, and frames/s and
//! p99 latency against batch size, one line per report.

use std::path::Path;

use plotters::prelude::*;

use super::read::{unique_labels, BenchFile, Run};
use crate::{Error, Result};

pub fn write_svg(files: &[BenchFile], path: &Path) -> Result<()> {
    let fail = |reason: String| Error::Write { path: path.to_owned(), reason };
    let mut svg = String::new();
    draw(files, &mut svg).map_err(|e| fail(e.to_string()))?;
    crate::outfile::write_atomically(path, |file| std::io::Write::write_all(file, svg.as_bytes()))
        .map_err(|e| fail(e.to_string()))
}

/// (latency ms, percentile) points of a run's CDF; reports without the curve give their percentiles.
fn cdf_points(run: &Run) -> Vec<(f64, f64)> {
    if run.end_to_end_cdf_ms.len() == 101 {
        return run.end_to_end_cdf_ms.iter().enumerate().map(|(p, &ms)| (ms, p as f64)).collect();
    }
    let s = &run.stages.end_to_end;
    vec![
        (s.min_ms, 0.0),
        (s.p50_ms, 50.0),
        (s.p90_ms, 90.0),
        (s.p95_ms, 95.0),
        (s.p99_ms, 99.0),
        (s.max_ms, 100.0),
    ]
}

/// Draws into `svg`, filled when the drawing ends.
fn draw(files: &[BenchFile], svg: &mut String) -> std::result::Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::with_string(svg, (1100, 900)).into_drawing_area();
    root.fill(&WHITE)?;
    let (top, bottom) = root.split_vertically(480);
    let (left, right) = bottom.split_horizontally(550);
    let labels = unique_labels(files);

    // The slowest tail sets the scale; the top percent would hide everything else behind outliers.
    let max_ms =
        files.iter().flat_map(|f| &f.runs).map(|r| r.stages.end_to_end.p99_ms).fold(1e-3, f64::max) * 1.1;
    let mut cdf = ChartBuilder::on(&top)
        .caption("end-to-end latency CDF (to p99 of the slowest run)", ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(55)
        .build_cartesian_2d(0.0..max_ms, 0.0..100.0)?;
    cdf.configure_mesh().x_desc("latency (ms)").y_desc("percentile").draw()?;
    let mut colour = 0;
    for (file, label) in files.iter().zip(&labels) {
        for run in &file.runs {
            let style = Palette99::pick(colour).stroke_width(2);
            colour += 1;
            cdf.draw_series(LineSeries::new(cdf_points(run), style))?
                .label(format!("{label}, batch {}", run.batch))
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], style));
        }
    }
    cdf.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;

    let max_batch = files.iter().flat_map(|f| &f.runs).map(|r| r.batch).max().unwrap_or(1) as f64;
    let sweep = |area: &DrawingArea<SVGBackend, _>,
                 title: &str,
                 y_desc: &str,
                 value: fn(&Run) -> f64|
     -> std::result::Result<(), Box<dyn std::error::Error>> {
        let max_y = files.iter().flat_map(|f| &f.runs).map(value).fold(1e-3, f64::max) * 1.15;
        let mut chart = ChartBuilder::on(area)
            .caption(title, ("sans-serif", 18))
            .margin(15)
            .x_label_area_size(40)
            .y_label_area_size(55)
            .build_cartesian_2d(0.5..max_batch + 0.5, 0.0..max_y)?;
        chart.configure_mesh().x_desc("batch size").y_desc(y_desc).draw()?;
        // Each report keeps the colour of its first CDF line.
        let mut first_colour = 0;
        for (file, label) in files.iter().zip(&labels) {
            let colour = Palette99::pick(first_colour).to_rgba();
            first_colour += file.runs.len();
            let mut points: Vec<(f64, f64)> = file.runs.iter().map(|r| (r.batch as f64, value(r))).collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            chart
                .draw_series(LineSeries::new(points.clone(), colour.stroke_width(2)))?
                .label(label.as_str())
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], colour.stroke_width(2)));
            chart.draw_series(points.into_iter().map(|p| Circle::new(p, 4, colour.filled())))?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .label_font(("sans-serif", 11))
            .draw()?;
        Ok(())
    };
    sweep(&left, "throughput against batch size", "frames/s", |r| r.frames_per_s)?;
    sweep(&right, "p99 end-to-end latency against batch size", "p99 (ms)", |r| r.stages.end_to_end.p99_ms)?;
    root.present()?;
    Ok(())
}
