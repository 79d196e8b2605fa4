//! The tune plot: accuracy drop against p99 latency, the Pareto front joined, the budget as a line.

use std::path::Path;

use plotters::prelude::*;

use super::TuneReport;
use crate::{Error, Result};

pub fn write_svg(report: &TuneReport, path: &Path) -> Result<()> {
    let fail = |reason: String| Error::Write { path: path.to_owned(), reason };
    let mut svg = String::new();
    draw(report, &mut svg).map_err(|e| fail(e.to_string()))?;
    crate::outfile::write_atomically(path, |file| std::io::Write::write_all(file, svg.as_bytes()))
        .map_err(|e| fail(e.to_string()))
}

fn short_name(variant: &str) -> String {
    Path::new(variant).file_stem().map_or(variant.to_string(), |s| s.to_string_lossy().into_owned())
}

/// Draws into `svg`, filled when the drawing ends.
fn draw(report: &TuneReport, svg: &mut String) -> std::result::Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::with_string(svg, (900, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let rows = &report.rows;
    // Room on the right for the last point's label.
    let max_x = rows.iter().map(|r| r.p99_ms).fold(1e-3, f64::max) * 1.35;
    let max_y =
        rows.iter().map(|r| r.accuracy_drop * 100.0).fold(report.budget * 100.0, f64::max) * 1.15 + 0.1;
    let mut chart = ChartBuilder::on(&root)
        .caption("edgert tune: accuracy drop against p99 latency", ("sans-serif", 22))
        .margin(20)
        .x_label_area_size(45)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..max_x, 0.0..max_y)?;
    chart.configure_mesh().x_desc("p99 end-to-end latency (ms)").y_desc("accuracy drop (%)").draw()?;
    let budget = report.budget * 100.0;
    chart
        .draw_series(LineSeries::new([(0.0, budget), (max_x, budget)], RED.stroke_width(1)))?
        .label(format!("budget {budget:.1} %"))
        .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], RED));
    let mut front: Vec<(f64, f64)> =
        rows.iter().filter(|r| r.pareto).map(|r| (r.p99_ms, r.accuracy_drop * 100.0)).collect();
    front.sort_by(|a, b| a.0.total_cmp(&b.0));
    chart
        .draw_series(LineSeries::new(front, BLUE.stroke_width(2)))?
        .label("Pareto front")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLUE));
    for (i, r) in rows.iter().enumerate() {
        let colour = if Some(i) == report.pick {
            GREEN
        } else if r.pareto {
            BLUE
        } else {
            BLACK
        };
        let point = (r.p99_ms, r.accuracy_drop * 100.0);
        let label = format!(
            "{} ({}){}",
            short_name(&r.variant),
            r.backend,
            if Some(i) == report.pick { " pick" } else { "" }
        );
        chart.draw_series([EmptyElement::at(point)
            + Circle::new((0, 0), 5, colour.filled())
            + Text::new(label, (8, -16), ("sans-serif", 13))])?;
    }
    chart.configure_series_labels().border_style(BLACK).background_style(WHITE).draw()?;
    root.present()?;
    Ok(())
}
