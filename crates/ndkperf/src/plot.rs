//! `sweep --plot`: bandwidth and p50 latency against message size, log2 x
//! axis, as an SVG file.

use std::path::Path;

use plotters::prelude::*;

use crate::error::{Error, Result};
use crate::report::PerfResult;
use ndkperf_cli::units::format_size;

/// Refuses a path that is not `.svg` or cannot be created, before a long
/// sweep runs.
pub fn check_path(path: &Path) -> Result<()> {
    let is_svg = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("svg"));
    if !is_svg {
        return Err(Error::msg(format!(
            "--plot {}: the plot is an SVG file, name it *.svg",
            path.display()
        )));
    }
    std::fs::File::create(path)
        .map(drop)
        .map_err(|e| Error::msg(format!("--plot {}: {e}", path.display())))
}

fn plot_error(e: impl std::fmt::Display) -> Error {
    Error::msg(format!("cannot draw the plot: {e}"))
}

/// Draws two stacked panels (bandwidth, p50 latency) of `rows` into
/// `path`.
pub fn draw(path: &Path, rows: &[PerfResult], op: &str, transport: &str) -> Result<()> {
    if rows.is_empty() {
        return Err(Error::msg("nothing to plot"));
    }
    let min = rows.iter().map(|r| r.size).min().unwrap_or(1) as f64;
    let max = rows.iter().map(|r| r.size).max().unwrap_or(1) as f64;
    let (x0, x1) = (min, if max > min { max } else { min * 2.0 });
    let bw_max = rows
        .iter()
        .map(|r| r.gbytes_per_sec)
        .fold(0.0f64, f64::max)
        .max(1e-6)
        * 1.15;
    let lat_min = rows
        .iter()
        .map(|r| r.lat_p50_us)
        .fold(f64::INFINITY, f64::min)
        .max(0.01);
    let lat_max = rows
        .iter()
        .map(|r| r.lat_p50_us)
        .fold(0.0f64, f64::max)
        .max(lat_min * 2.0);

    let root = SVGBackend::new(path, (900, 800)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_error)?;
    let (top, bottom) = root.split_vertically(400);
    let size_label = |v: &f64| format_size(v.round() as u64);

    let mut bw = ChartBuilder::on(&top)
        .caption(
            format!("ndkperf sweep: {op} over {transport}: bandwidth"),
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d((x0..x1).log_scale().base(2.0), 0.0..bw_max)
        .map_err(plot_error)?;
    bw.configure_mesh()
        .x_desc("message size [bytes]")
        .y_desc("bandwidth [GB/s = 10^9 B/s]")
        .x_label_formatter(&size_label)
        .draw()
        .map_err(plot_error)?;
    let points: Vec<(f64, f64)> = rows
        .iter()
        .map(|r| (r.size as f64, r.gbytes_per_sec))
        .collect();
    bw.draw_series(LineSeries::new(points.clone(), BLUE.stroke_width(2)))
        .map_err(plot_error)?
        .label("BW average")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLUE));
    bw.draw_series(points.iter().map(|&p| Circle::new(p, 3, BLUE.filled())))
        .map_err(plot_error)?;
    bw.configure_series_labels()
        .border_style(BLACK)
        .background_style(WHITE.mix(0.8))
        .draw()
        .map_err(plot_error)?;

    let mut lat = ChartBuilder::on(&bottom)
        .caption(
            format!("ndkperf sweep: {op} over {transport}: p50 latency"),
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(
            (x0..x1).log_scale().base(2.0),
            (lat_min / 1.5..lat_max * 1.5).log_scale(),
        )
        .map_err(plot_error)?;
    lat.configure_mesh()
        .x_desc("message size [bytes]")
        .y_desc("p50 latency at depth 1 [usec]")
        .x_label_formatter(&size_label)
        .y_label_formatter(&|v: &f64| log_label(*v))
        .draw()
        .map_err(plot_error)?;
    let points: Vec<(f64, f64)> = rows
        .iter()
        .map(|r| (r.size as f64, r.lat_p50_us.max(lat_min)))
        .collect();
    lat.draw_series(LineSeries::new(points.clone(), RED.stroke_width(2)))
        .map_err(plot_error)?
        .label(format!("t_p50 ({})", rows[0].lat_kind))
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED));
    lat.draw_series(points.iter().map(|&p| Circle::new(p, 3, RED.filled())))
        .map_err(plot_error)?;
    lat.configure_series_labels()
        .border_style(BLACK)
        .background_style(WHITE.mix(0.8))
        .draw()
        .map_err(plot_error)?;
    root.present().map_err(plot_error)?;
    Ok(())
}

/// A log axis' label: only 1, 2 and 5 times a power of ten get one (the
/// axis' other ticks, 3, 4, 6 ... 9, stay unlabelled, as they crowded
/// each other).
fn log_label(v: f64) -> String {
    if !(v.is_finite() && v > 0.0) {
        return String::new();
    }
    let decade = 10f64.powf(v.log10().floor());
    let mantissa = v / decade;
    if [1.0, 2.0, 5.0, 10.0]
        .iter()
        .any(|m| (mantissa - m).abs() < 1e-6 * m)
    {
        format!("{}", (v * 1e6).round() / 1e6)
    } else {
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_axis_labels_only_one_two_and_five() {
        let shown: Vec<String> = [
            0.2, 0.3, 0.5, 1.0, 3.0, 4.0, 10.0, 20.0, 40.0, 50.0, 60.0, 90.0, 100.0, 200.0,
        ]
        .iter()
        .map(|&v| log_label(v))
        .filter(|l| !l.is_empty())
        .collect();
        assert_eq!(shown, ["0.2", "0.5", "1", "10", "20", "50", "100", "200"]);
        assert_eq!(log_label(0.0), "");
    }
}
