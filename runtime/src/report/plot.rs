//! `report plot`: one SVG with the end-to-end latency CDF of every run overlaid, and frames/s and
//! p99 latency against batch size, one line per report. Server reports (`bench --scenario
//! server`) get their own chart instead: p99 and p50 against offered QPS, the bound and the knee.

use std::path::Path;

use plotters::prelude::*;

use super::read::{unique_labels, BenchFile, Run};
use crate::{Error, Result};

pub fn write_svg(files: &[BenchFile], path: &Path) -> Result<()> {
    let fail = |reason: String| Error::Write { path: path.to_owned(), reason };
    let servers = files.iter().filter(|f| f.runs.iter().any(Run::is_server)).count();
    if servers > 0 && servers < files.len() {
        return Err(Error::Usage(
            "plot server reports (bench --scenario server) apart from the others: their x axis is the offered load, not the batch".into(),
        ));
    }
    let mut svg = String::new();
    let drawn = if servers > 0 { draw_server(files, &mut svg) } else { draw(files, &mut svg) };
    drawn.map_err(|e| fail(e.to_string()))?;
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

/// A server report's points: (offered QPS, p50, p99) in order of load.
fn load_points(file: &BenchFile) -> Vec<(f64, f64, f64)> {
    let mut points: Vec<_> = file
        .runs
        .iter()
        .filter_map(|r| r.scenario.as_ref())
        .filter_map(|s| Some((s.offered_qps?, s.latency_ms.p50_ms, s.latency_ms.p99_ms)))
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    points
}

/// Where the report's p99 leaves its bound: the peak `--find-peak` found, else the highest
/// offered rate whose p99 is within the bound.
/// `points` are the file's `load_points`.
fn knee(file: &BenchFile, points: &[(f64, f64, f64)]) -> Option<(f64, f64)> {
    if let Some(qps) = file.peak.as_ref().and_then(|p| p.qps) {
        return points.iter().find(|p| p.0 == qps).map(|p| (p.0, p.2));
    }
    let bound = file.runs.iter().find_map(|r| r.scenario.as_ref()?.latency_bound_ms)?;
    points.iter().filter(|p| p.2 <= bound).map(|p| (p.0, p.2)).next_back()
}

fn draw_server(files: &[BenchFile], svg: &mut String) -> std::result::Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::with_string(svg, (1100, 650)).into_drawing_area();
    root.fill(&WHITE)?;
    let labels: Vec<String> = unique_labels(files)
        .into_iter()
        .zip(files)
        .map(|(label, file)| match file.runs.iter().find_map(|r| r.scenario.as_ref()) {
            Some(s) => format!(
                "{label} · max batch {}, delay {} ms, {} worker(s)",
                s.max_batch, s.max_queue_delay_ms, s.workers
            ),
            None => label,
        })
        .collect();
    let bounds: Vec<f64> = files
        .iter()
        .filter_map(|f| f.runs.iter().find_map(|r| r.scenario.as_ref()?.latency_bound_ms))
        .collect();
    let points: Vec<_> = files.iter().map(load_points).collect();
    let max_qps = points.iter().flatten().map(|p| p.0).fold(1e-3, f64::max) * 1.05;
    let highest = points.iter().flatten().map(|p| p.2).chain(bounds.iter().copied()).fold(1e-3, f64::max);
    // Past the knee p99 runs away: the scale stops at 4x the highest bound so the knee stays
    // legible, and points above it are drawn at the top edge.
    let ceiling = bounds.iter().copied().fold(f64::NAN, f64::max) * 4.0;
    let clipped = highest > ceiling;
    let max_ms = if clipped { ceiling } else { highest } * 1.15;
    let points: Vec<Vec<_>> = points
        .into_iter()
        .map(|ps| ps.into_iter().map(|p| (p.0, p.1.min(max_ms), p.2.min(max_ms))).collect())
        .collect();
    let caption = format!(
        "latency against offered load (p99 solid, p50 dashed; from each query's arrival){}",
        if clipped { "; clipped at 4x the bound" } else { "" }
    );
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 18))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..max_qps, 0.0..max_ms)?;
    chart.configure_mesh().x_desc("offered load (queries/s)").y_desc("latency (ms)").draw()?;
    for (i, ((file, label), points)) in files.iter().zip(&labels).zip(&points).enumerate() {
        let colour = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(points.iter().map(|p| (p.0, p.2)), colour.stroke_width(2)))?
            .label(label.as_str())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], colour.stroke_width(2)));
        chart.draw_series(points.iter().map(|p| Circle::new((p.0, p.2), 3, colour.filled())))?;
        chart.draw_series(DashedLineSeries::new(
            points.iter().map(|p| (p.0, p.1)),
            6,
            4,
            colour.stroke_width(1),
        ))?;
        if let Some((qps, p99)) = knee(file, points) {
            chart.draw_series([Circle::new((qps, p99), 8, colour.stroke_width(2))])?;
            chart.draw_series([Text::new(
                format!("knee {qps:.0} QPS"),
                (qps, p99 + max_ms * 0.03),
                ("sans-serif", 13),
            )])?;
        }
    }
    let mut drawn_bounds: Vec<f64> = Vec::new();
    for bound in bounds {
        if !drawn_bounds.contains(&bound) {
            drawn_bounds.push(bound);
            chart.draw_series(DashedLineSeries::new(
                [(0.0, bound), (max_qps, bound)],
                10,
                5,
                RED.stroke_width(1),
            ))?;
            chart.draw_series([Text::new(
                format!("p99 bound {bound} ms"),
                (max_qps * 0.01, bound + max_ms * 0.01),
                ("sans-serif", 12),
            )])?;
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .label_font(("sans-serif", 12))
        .draw()?;
    root.present()?;
    Ok(())
}
