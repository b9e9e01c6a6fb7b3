//! The contended rows as a table and a chart (`docs/benchmarks.md`, "Contended rows";
//! `docs/img/contended.svg`): per policy, ours beside its best anchor and beside its *floor*, what
//! its unavoidable read-modify-writes on a shared word cost at the same thread count. Read from the
//! output of `cases time contended/` (`chart --contended FILE`).

use std::collections::HashMap;
use std::fmt::Write as _;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// One policy of the contended table: its row, its anchors' rows and its floor.
#[derive(Debug, Clone, Copy)]
pub struct Policy {
    /// What the rows measure.
    pub title: &'static str,
    /// Our row's name in group `contended`.
    pub ours: &'static str,
    /// The anchors' rows, in group `contended`.
    pub anchors: &'static [&'static str],
    /// The floor's row: the policy alone on one thread (`*_alone`: no read-modify-write on a
    /// shared word on the pass path, so contention should add nothing to its own cost),
    /// `floor_fetch_add` (one) or `floor_add_sub` (two on one word: a slot taken and given back).
    pub floor: &'static str,
}

/// The policies in table order. The stack's floor is the sum of its parts ([`stack_parts`]).
pub const POLICIES: &[Policy] = &[
    Policy { title: "retry, first attempt ok", ours: "retry_ours", anchors: &["retry_backon"], floor: "retry_alone" },
    Policy {
        title: "retry budget, success",
        ours: "budget_ours",
        anchors: &["budget_tower_tps"],
        floor: "budget_alone",
    },
    Policy {
        title: "circuit breaker, closed",
        ours: "breaker_ours",
        anchors: &["breaker_recloser", "breaker_failsafe"],
        floor: "breaker_alone",
    },
    Policy {
        title: "rate limiter, permits to spare",
        ours: "rate_limiter_ours",
        anchors: &["rate_limiter_governor", "rate_limiter_tower_resilience"],
        floor: "floor_fetch_add",
    },
    Policy {
        title: "bulkhead, room to spare",
        ours: "bulkhead_ours",
        anchors: &["bulkhead_tokio_semaphore", "bulkhead_tower_concurrency_limit"],
        floor: "floor_add_sub",
    },
    Policy {
        title: "adaptive limit (Aimd), passing",
        ours: "adaptive_ours",
        anchors: &["adaptive_tower_resilience"],
        floor: "floor_add_sub",
    },
    Policy {
        title: "timeout, not firing",
        ours: "timeout_ours",
        anchors: &["timeout_tokio", "timeout_seatbelt"],
        floor: "timeout_alone",
    },
];

/// The rows whose sum, less the delegate calls counted more than once, is the stack's floor: the
/// four policies of `stack_ours` each over one call.
pub const STACK_PARTS: &[&str] = &["retry_ours", "breaker_ours", "rate_limiter_ours", "bulkhead_ours"];

/// Median CPU nanoseconds per call and overlap, by row name, read from `cases time` output
/// (`# ` lines are comments; other groups are skipped).
///
/// ```
/// let rows = bench::contended::parse("# header\ncontended/floor_call\t2\t1.5\t1.4\t1.6\t1.5\t0.98\n");
/// assert_eq!(rows["floor_call"], (1.5, 0.98));
/// ```
pub fn parse(text: &str) -> HashMap<String, (f64, f64)> {
    let mut rows = HashMap::new();
    for line in text.lines().filter(|line| !line.starts_with('#')) {
        let fields: Vec<&str> = line.split('\t').collect();
        let ([id, _, ns, ..], Some(overlap)) = (fields.as_slice(), fields.last()) else { continue };
        let Some(name) = id.strip_prefix("contended/") else { continue };
        if let (Ok(ns), Ok(overlap)) = (ns.parse(), overlap.parse()) {
            rows.insert(name.to_owned(), (ns, overlap));
        }
    }
    rows
}

/// The stack's floor: the sum of its parts' rows less the delegate calls counted more than once
/// (three `floor_call`s), when every row has a figure.
pub fn stack_parts(rows: &HashMap<String, (f64, f64)>) -> Option<f64> {
    sum_of_calls(rows, STACK_PARTS)
}

/// The rows whose sum, less the delegate calls counted more than once, is the floor of the
/// stack's *shape*: its two contended words as bare atomics on two lines apart
/// (`floor_two_lines`), plus the two policies that write no shared word, each over one call.
pub const STACK_SHAPE: &[&str] = &["floor_two_lines", "retry_ours", "breaker_ours"];

/// The floor of the stack's shape ([`STACK_SHAPE`]): what its two contended lines cost together,
/// which under contention is more than what each costs alone (`docs/benchmarks.md`, "Contended
/// rows"), plus its retry and breaker, less the two extra delegate calls.
pub fn stack_shape(rows: &HashMap<String, (f64, f64)>) -> Option<f64> {
    sum_of_calls(rows, STACK_SHAPE)
}

/// The sum of `names`' rows, each over one delegate call, less the calls beyond the first (one
/// `floor_call` each), when every row has a figure.
fn sum_of_calls(rows: &HashMap<String, (f64, f64)>, names: &[&str]) -> Option<f64> {
    let sum: Option<f64> = names.iter().map(|name| ns(rows, name)).sum();
    Some(sum? - (names.len() - 1) as f64 * ns(rows, "floor_call")?)
}

fn ns(rows: &HashMap<String, (f64, f64)>, name: &str) -> Option<f64> {
    rows.get(name).map(|r| r.0)
}

fn fmt(value: Option<f64>) -> String {
    value.map_or_else(|| "–".to_owned(), |v| if v < 10.0 { format!("{v:.1}") } else { format!("{v:.0}") })
}

fn ratio(value: Option<f64>) -> String {
    value.map_or_else(|| "–".to_owned(), |v| format!("{v:.2}"))
}

/// The table of `docs/benchmarks.md`: per policy ours, its best anchor, ours ÷ anchor, the floor
/// and ours ÷ floor; then the stack against the sum of its parts and against the floor of its
/// shape.
pub fn markdown(rows: &HashMap<String, (f64, f64)>) -> String {
    let mut out = String::from(
        "| policy | ours ns | best anchor | anchor ns | ours ÷ anchor | floor | floor ns | ours ÷ floor |\n|---|---|---|---|---|---|---|---|\n",
    );
    for policy in POLICIES {
        let ours = ns(rows, policy.ours);
        let best = policy
            .anchors
            .iter()
            .filter_map(|name| ns(rows, name).map(|v| (*name, v)))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        let floor = ns(rows, policy.floor);
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            policy.title,
            fmt(ours),
            best.map_or("–", |b| b.0),
            fmt(best.map(|b| b.1)),
            ratio(ours.zip(best).map(|(o, b)| o / b.1)),
            policy.floor,
            fmt(floor),
            ratio(ours.zip(floor).map(|(o, f)| o / f)),
        );
    }
    let stack = ns(rows, "stack_ours");
    for (title, floor, figure) in [
        ("stack (retry + breaker + rate limiter + bulkhead)", "sum of parts", stack_parts(rows)),
        ("the same stack", "floor of its shape", stack_shape(rows)),
    ] {
        let _ = writeln!(
            out,
            "| {title} | {} | – | – | – | {floor} | {} | {} |",
            fmt(stack),
            fmt(figure),
            ratio(stack.zip(figure).map(|(s, f)| s / f)),
        );
    }
    out
}

const WIDTH: i32 = 900;
const ROW: i32 = 15;
const TITLE: i32 = 19;
const GAP: i32 = 9;
const TOP: i32 = 60;
const LABEL: i32 = 220;
const BARS: i32 = WIDTH - LABEL - 70;

const OURS: RGBColor = RGBColor(31, 102, 170);
const ANCHOR: RGBColor = RGBColor(160, 160, 160);
const FLOOR: RGBColor = RGBColor(205, 205, 205);
const GRID: RGBColor = RGBColor(228, 228, 228);

/// One bar of the chart: its label, its colour and its figure (`None`: no figure).
type ChartBar = (String, RGBColor, Option<f64>);

/// The chart: per policy ours (blue), its anchors (grey) and its floor (light grey), ns per call on
/// a logarithmic axis.
///
/// # Errors
/// When plotters fails to draw (it does not for an in-memory SVG; the error is passed on).
pub fn svg(rows: &HashMap<String, (f64, f64)>, subtitle: &str) -> Result<String, Box<dyn std::error::Error>> {
    let mut blocks: Vec<(&str, Vec<ChartBar>)> = POLICIES
        .iter()
        .map(|p| {
            let mut bars = vec![("resilience4cata".to_owned(), OURS, ns(rows, p.ours))];
            bars.extend(p.anchors.iter().map(|a| {
                (a.trim_start_matches(p.ours.trim_end_matches("ours")).replace('_', " "), ANCHOR, ns(rows, a))
            }));
            bars.push((
                format!("floor: {}", p.floor.trim_start_matches("floor_").replace('_', " ")),
                FLOOR,
                ns(rows, p.floor),
            ));
            (p.title, bars)
        })
        .collect();
    blocks.push((
        "retry + breaker + rate limiter + bulkhead",
        vec![
            ("resilience4cata".to_owned(), OURS, ns(rows, "stack_ours")),
            ("floor: sum of the parts".to_owned(), FLOOR, stack_parts(rows)),
            ("floor: its shape (two lines)".to_owned(), FLOOR, stack_shape(rows)),
        ],
    ));
    let height = TOP + blocks.iter().map(|(_, bars)| TITLE + ROW * bars.len() as i32 + GAP).sum::<i32>() + 20;
    let values = blocks.iter().flat_map(|(_, bars)| bars.iter().filter_map(|b| b.2));
    let (min, max) = values.fold((f64::INFINITY, 1.0_f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let lo = if min.is_finite() { 10f64.powf(min.max(0.1).log10().floor()) } else { 1.0 };
    let hi = 10f64.powf(max.log10().ceil()).max(lo * 10.0);
    let scale = |v: f64| ((v.max(lo).ln() - lo.ln()) / (hi.ln() - lo.ln()) * f64::from(BARS)).round() as i32;

    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH as u32, height as u32)).into_drawing_area();
        root.fill(&WHITE)?;
        let font = |size: u32| ("sans-serif", size).into_font();
        let title = "Contended: one instance called by every thread at once, ns per call (log scale, lower is better)";
        root.draw(&Text::new(title, (12, 10), font(15).color(&BLACK)))?;
        root.draw(&Text::new(subtitle.to_owned(), (12, 32), font(11).color(&RGBColor(90, 90, 90))))?;
        let (x0, bottom) = (LABEL, height - 20);
        let mut tick = lo;
        while tick <= hi * 1.001 {
            let x = x0 + scale(tick);
            root.draw(&PathElement::new(vec![(x, TOP - 4), (x, bottom)], GRID))?;
            let text = font(10).color(&RGBColor(120, 120, 120)).pos(Pos::new(HPos::Center, VPos::Top));
            root.draw(&Text::new(format!("{tick}"), (x, bottom + 2), text))?;
            tick *= 10.0;
        }
        let mut y = TOP;
        for (title, bars) in &blocks {
            root.draw(&Text::new(*title, (12, y + 3), font(12).color(&BLACK)))?;
            y += TITLE;
            for (label, colour, value) in bars {
                let text = font(11).color(&BLACK).pos(Pos::new(HPos::Right, VPos::Center));
                root.draw(&Text::new(label.as_str(), (x0 - 6, y + ROW / 2), text))?;
                let text = font(10).color(&RGBColor(60, 60, 60)).pos(Pos::new(HPos::Left, VPos::Center));
                match value {
                    Some(v) => {
                        let end = x0 + scale(*v).max(1);
                        root.draw(&Rectangle::new([(x0, y + 2), (end, y + ROW - 2)], colour.filled()))?;
                        root.draw(&Text::new(fmt(Some(*v)), (end + 4, y + ROW / 2), text))?;
                    }
                    None => root.draw(&Text::new("no figure", (x0 + 4, y + ROW / 2), text))?,
                }
                y += ROW;
            }
            y += GAP;
        }
        root.present()?;
    }
    Ok(out)
}
