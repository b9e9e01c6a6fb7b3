//! The adaptive limit finding a dependency's capacity, drawn: a simulated dependency (capacity 40
//! concurrent calls, then 15 from halfway; latency rising sharply past capacity) under a steady
//! offered load of 8 calls per millisecond, protected in turn by Aimd, Gradient2 and Vegas.
//!
//! Run it from the workspace root with `cargo run --example adaptive_limit`. It runs on the
//! manual clock (20 simulated seconds per algorithm, a few real ones in all), prints where each
//! algorithm settled, and writes `docs/img/adaptive-limit.svg`: one panel per algorithm with the
//! limit, the calls in flight and the capacity (left axis, calls) and the mean latency (right
//! axis, milliseconds). Deterministic: the same SVG every run.

use plotters::prelude::*;
use resilience4cata::adaptive_limit::Algorithm;
use resilience4cata_examples::adaptive_limit_sim::{Sample, Scenario, simulate};

const OUT: &str = "docs/img/adaptive-limit.svg";
const ALGORITHMS: [Algorithm; 3] = [Algorithm::Aimd, Algorithm::Gradient2, Algorithm::Vegas];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let scenario = Scenario::default();
    let runs: Vec<_> = ALGORITHMS.iter().map(|&a| (a, simulate(a, &scenario))).collect();
    for (algorithm, samples) in &runs {
        let tail = &samples[samples.len() * 9 / 10..];
        let settled = tail.iter().map(|s| s.limit).sum::<f64>() / tail.len() as f64;
        println!("{algorithm:?}: limit settles at {settled:.1} for a capacity of {}", scenario.capacity.1);
    }
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(OUT);
    draw(&path, &scenario, &runs)?;
    println!("wrote {OUT}");
    Ok(())
}

fn draw(
    path: &std::path::Path,
    scenario: &Scenario,
    runs: &[(Algorithm, Vec<Sample>)],
) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, (960, 900)).into_drawing_area();
    root.fill(&WHITE)?;
    let panels = root.split_evenly((runs.len(), 1));
    for (panel, (algorithm, samples)) in panels.iter().zip(runs) {
        panel_for(panel, scenario, *algorithm, samples)?;
    }
    root.present()?;
    Ok(())
}

fn panel_for(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    scenario: &Scenario,
    algorithm: Algorithm,
    samples: &[Sample],
) -> Result<(), Box<dyn std::error::Error>> {
    let seconds = scenario.duration.as_secs_f64();
    let calls = samples.iter().map(|s| s.limit.max(s.in_flight)).fold(50.0, f64::max) * 1.1;
    let latency = scenario.give_up.as_secs_f64() * 1e3 * 1.1;
    let mut chart = ChartBuilder::on(area)
        .caption(format!("{algorithm:?}"), ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(45)
        .right_y_label_area_size(45)
        .build_cartesian_2d(0.0..seconds, 0.0..calls)?
        .set_secondary_coord(0.0..seconds, 0.0..latency);
    chart.configure_mesh().x_desc("simulated seconds").y_desc("calls").light_line_style(WHITE).draw()?;
    chart.configure_secondary_axes().y_desc("latency (ms)").draw()?;
    let series = |f: fn(&Sample) -> f64| samples.iter().map(move |s| (s.at, f(s))).collect::<Vec<_>>();
    chart
        .draw_series(LineSeries::new(series(|s| f64::from(s.capacity)), BLACK.stroke_width(1)))?
        .label("capacity")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], BLACK));
    chart
        .draw_series(LineSeries::new(series(|s| s.limit), BLUE.stroke_width(2)))?
        .label("limit (100 ms mean)")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], BLUE));
    chart
        .draw_series(LineSeries::new(series(|s| s.in_flight), GREEN.stroke_width(1)))?
        .label("in flight (100 ms mean)")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], GREEN));
    chart
        .draw_secondary_series(LineSeries::new(series(|s| s.latency_ms), RED.stroke_width(1)))?
        .label("latency (ms, right axis)")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], RED));
    chart.configure_series_labels().position(SeriesLabelPosition::UpperRight).border_style(BLACK).draw()?;
    Ok(())
}
