//! The user-shaped rows as figures: the chart of `docs/benchmarks.md` (`docs/img/benchmarks.svg`)
//! and its tables, from `callgrind.sh`'s output and criterion's results. Driven by the `chart`
//! binary (`cargo run -p bench --bin chart`), which needs neither valgrind nor a system font: the
//! SVG backend writes its labels as `<text>` elements and plotters' built-in text metrics lay them
//! out.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::{CASES, Case, Form};

/// Which figure the chart draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Instructions per call from `callgrind.sh` (noise-free; the default).
    Instructions,
    /// Criterion's median time per call, in nanoseconds.
    Nanoseconds,
}

impl Metric {
    fn unit(self) -> &'static str {
        match self {
            Metric::Instructions => "instructions per call",
            Metric::Nanoseconds => "ns per call (criterion median)",
        }
    }
}

/// The figures of every case: instructions and allocations per call (`callgrind.sh`), and
/// criterion's median time per call.
#[derive(Debug, Default, Clone)]
pub struct Figures {
    /// Instructions per call, by case id.
    pub instructions: HashMap<String, f64>,
    /// Allocations per call, by case id.
    pub allocations: HashMap<String, f64>,
    /// Median nanoseconds per call, by case id.
    pub nanoseconds: HashMap<String, f64>,
}

impl Figures {
    /// Reads `callgrind.sh`'s output: a header, then `id instr/call allocs/call` lines where a
    /// missing figure is `-`.
    ///
    /// ```
    /// let f = bench::report::Figures::from_callgrind("case instr/call allocs/call\nuser_floor/direct_sync 20.0 0\nuser_multi_thread/direct - -\n");
    /// assert_eq!(f.instructions["user_floor/direct_sync"], 20.0);
    /// assert_eq!(f.allocations["user_floor/direct_sync"], 0.0);
    /// assert!(!f.instructions.contains_key("user_multi_thread/direct"));
    /// ```
    pub fn from_callgrind(text: &str) -> Figures {
        let mut figures = Figures::default();
        for line in text.lines() {
            let [id, instr, allocs] = line.split_whitespace().collect::<Vec<_>>()[..] else { continue };
            if !id.contains('/') {
                continue;
            }
            if let Ok(value) = instr.parse() {
                figures.instructions.insert(id.to_owned(), value);
            }
            if let Ok(value) = allocs.parse() {
                figures.allocations.insert(id.to_owned(), value);
            }
        }
        figures
    }

    /// Adds criterion's median (`<root>/<group>/<name>/new/estimates.json`) of every case found
    /// under `root`; cases criterion has not run are left out.
    pub fn read_criterion(&mut self, root: &Path) {
        for case in CASES {
            let path = root.join(case.group).join(case.name).join("new").join("estimates.json");
            let Ok(text) = std::fs::read_to_string(&path) else { continue };
            let Ok(json) = serde_json::from_str::<serde_json::Value>(&text) else { continue };
            if let Some(median) = json["median"]["point_estimate"].as_f64() {
                self.nanoseconds.insert(case.id(), median);
            }
        }
    }

    fn get(&self, metric: Metric, id: &str) -> Option<f64> {
        match metric {
            Metric::Instructions => self.instructions.get(id),
            Metric::Nanoseconds => self.nanoseconds.get(id),
        }
        .copied()
    }
}

/// What each user-shaped group measures, in the order the chart and tables show them.
pub const GROUPS: &[(&str, &str)] = &[
    ("user_floor", "harness floor (the bare call)"),
    ("user_retry_success", "retry, first attempt ok"),
    ("user_retry_fail_once", "retry, fails once, zero wait"),
    ("user_breaker_closed", "circuit breaker, closed"),
    ("user_rate_limiter", "rate limiter, permits to spare"),
    ("user_bulkhead", "bulkhead, room to spare"),
    ("user_timeout", "timeout, not firing"),
    ("user_adaptive_limit", "adaptive limit (Aimd), passing"),
    ("user_hedge", "hedge, first attempt answers"),
    ("user_fallback", "fallback, not needed"),
    ("user_stack", "retry + breaker + rate limiter + bulkhead"),
];

/// The name a reader knows a row's crate by.
///
/// ```
/// assert_eq!(bench::report::label("ours_async"), "resilience4cata");
/// assert_eq!(bench::report::label("tower_resilience_async"), "tower-resilience");
/// assert_eq!(bench::report::label("tokio_semaphore_sync"), "tokio Semaphore");
/// ```
pub fn label(name: &str) -> &'static str {
    let stem = name.trim_end_matches("_sync").trim_end_matches("_async");
    match stem {
        "ours" => "resilience4cata",
        "direct" => "direct call",
        "backon" => "backon",
        "tower_retry" => "tower retry",
        "seatbelt" => "seatbelt",
        "tower_resilience" => "tower-resilience",
        "recloser" => "recloser",
        "failsafe" => "failsafe",
        "governor" => "governor",
        "tokio_semaphore" => "tokio Semaphore",
        "tokio_timeout" => "tokio timeout",
        _ => "?",
    }
}

fn is_ours(case: &Case) -> bool {
    case.name.starts_with("ours")
}

fn single_thread(group: &str, form: Form) -> impl Iterator<Item = &'static Case> + '_ {
    crate::group(group).filter(move |case| case.form == form)
}

/// The best (lowest) anchor figure of `group` in `form`, with the anchor's name.
fn best_anchor(figures: &Figures, metric: Metric, group: &str, form: Form) -> Option<(&'static str, f64)> {
    single_thread(group, form)
        .filter(|case| !is_ours(case) && group != "user_floor")
        .filter_map(|case| Some((case.name, figures.get(metric, &case.id())?)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
}

fn form_name(form: Form) -> &'static str {
    match form {
        Form::Sync => "sync",
        Form::Awaited => "async",
        Form::Async => "async, polled once",
        Form::MultiThread => "multi-thread",
    }
}

fn cell(value: Option<f64>) -> String {
    match value {
        Some(v) if v < 100.0 && v.fract() != 0.0 => format!("{v:.1}"),
        Some(v) => format!("{v:.0}"),
        None => "–".to_owned(),
    }
}

/// The tables of `docs/benchmarks.md`'s user-shaped section: every single-thread row with its
/// time, instructions, allocations and how it compares with the best anchor of its group and
/// form; then the multi-thread rows beside the bare call.
pub fn markdown(figures: &Figures) -> String {
    let mut out = String::new();
    out.push_str("| what | form | crate | ns/call | instr/call | allocs/call | best anchor (instr) | × best anchor (ns, instr) |\n");
    out.push_str("|---|---|---|---|---|---|---|---|\n");
    for &(group, title) in GROUPS {
        for form in [Form::Sync, Form::Awaited] {
            let best_i = best_anchor(figures, Metric::Instructions, group, form);
            let best_t = best_anchor(figures, Metric::Nanoseconds, group, form);
            for case in single_thread(group, form) {
                let id = case.id();
                let (ns, instr) = (figures.nanoseconds.get(&id).copied(), figures.instructions.get(&id).copied());
                let allocs = figures.allocations.get(&id).map_or("–".to_owned(), |a| format!("{a:.0}"));
                let (anchor, ratio) = if is_ours(case) {
                    let ratio = |best: Option<(&str, f64)>, ours: Option<f64>| match (best, ours) {
                        (Some((_, b)), Some(o)) if o > 0.0 => format!("{:.2}", b / o),
                        _ => "–".to_owned(),
                    };
                    let anchor =
                        best_i.map_or("–".to_owned(), |(name, v)| format!("{} {}", label(name), cell(Some(v))));
                    (anchor, format!("{} / {}", ratio(best_t, ns), ratio(best_i, instr)))
                } else {
                    (String::new(), String::new())
                };
                let name =
                    if is_ours(case) { format!("**{}**", label(case.name)) } else { label(case.name).to_owned() };
                let _ = writeln!(
                    out,
                    "| {title} | {} | {name} | {} | {} | {allocs} | {anchor} | {ratio} |",
                    form_name(form),
                    cell(ns),
                    cell(instr)
                );
            }
        }
    }
    out.push_str("\n| policy (2 workers, 2 callers) | ns/call, wall | × the bare call |\n|---|---|---|\n");
    let bare = figures.nanoseconds.get("user_multi_thread/direct").copied();
    for case in crate::group("user_multi_thread") {
        let ns = figures.nanoseconds.get(&case.id()).copied();
        let ratio = match (ns, bare) {
            (Some(n), Some(b)) if b > 0.0 => format!("{:.1}", n / b),
            _ => "–".to_owned(),
        };
        let what = case.name.strip_prefix("ours_").map_or("bare call".to_owned(), |p| p.replace('_', " "));
        let _ = writeln!(out, "| {what} | {} | {ratio} |", cell(ns));
    }
    out
}

/// One bar of the chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// The crate.
    pub label: &'static str,
    /// Whether it is ours.
    pub ours: bool,
    /// The figure; `None` when the input had none (drawn as "no figure").
    pub value: Option<f64>,
}

/// The bars of one group in one form.
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    /// What the group measures.
    pub title: &'static str,
    /// Ours first, then the anchors in table order.
    pub bars: Vec<Bar>,
}

/// The chart's content: for sync then async (awaited), every group with a row in that form.
pub fn blocks(figures: &Figures, metric: Metric) -> [(Form, Vec<Block>); 2] {
    [Form::Sync, Form::Awaited].map(|form| {
        let blocks = GROUPS
            .iter()
            .filter_map(|&(group, title)| {
                let mut cases: Vec<&Case> = single_thread(group, form).collect();
                cases.sort_by_key(|case| !is_ours(case));
                let bars: Vec<Bar> = cases
                    .into_iter()
                    .map(|case| Bar {
                        label: label(case.name),
                        ours: is_ours(case),
                        value: figures.get(metric, &case.id()),
                    })
                    .collect();
                (!bars.is_empty()).then_some(Block { title, bars })
            })
            .collect();
        (form, blocks)
    })
}

const WIDTH: i32 = 1200;
const ROW: i32 = 15;
const TITLE: i32 = 19;
const GAP: i32 = 9;
const TOP: i32 = 70;
const PANEL: i32 = WIDTH / 2;
const LABEL: i32 = 130;
const BARS: i32 = PANEL - LABEL - 70;

const OURS: RGBColor = RGBColor(31, 102, 170);
const ANCHOR: RGBColor = RGBColor(160, 160, 160);
const FLOOR: RGBColor = RGBColor(205, 205, 205);
const GRID: RGBColor = RGBColor(228, 228, 228);

fn panel_height(blocks: &[Block]) -> i32 {
    blocks.iter().map(|b| TITLE + ROW * b.bars.len() as i32 + GAP).sum()
}

/// Renders the chart as an SVG document: two panels (sync, async), each group a block of
/// horizontal bars (ours first, in blue), on a logarithmic axis of `metric`.
///
/// # Errors
/// When plotters fails to draw (it does not for an in-memory SVG; the error is passed on rather
/// than hidden).
pub fn svg(figures: &Figures, metric: Metric, subtitle: &str) -> Result<String, Box<dyn std::error::Error>> {
    let panels = blocks(figures, metric);
    let height = TOP + panels.iter().map(|(_, b)| panel_height(b)).max().unwrap_or(0) + 20;
    let values = panels.iter().flat_map(|(_, b)| b.iter()).flat_map(|b| &b.bars).filter_map(|bar| bar.value);
    let (min, max) = values.fold((f64::INFINITY, 1.0_f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    // From the power of ten at or below the smallest figure to the one at or above the largest.
    let lo = if min.is_finite() { 10f64.powf(min.max(1.0).log10().floor()) } else { 1.0 };
    let hi = 10f64.powf(max.log10().ceil()).max(lo * 10.0);
    let scale = |v: f64| ((v.max(lo).ln() - lo.ln()) / (hi.ln() - lo.ln()) * f64::from(BARS)).round() as i32;

    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH as u32, height as u32)).into_drawing_area();
        root.fill(&WHITE)?;
        let font = |size: u32| ("sans-serif", size).into_font();
        root.draw(&Text::new(
            format!(
                "resilience4cata beside the crates users pick instead: {} (log scale, lower is better)",
                metric.unit()
            ),
            (12, 10),
            font(17).color(&BLACK),
        ))?;
        root.draw(&Text::new(subtitle.to_owned(), (12, 32), font(12).color(&RGBColor(90, 90, 90))))?;
        for (index, (form, blocks)) in panels.iter().enumerate() {
            let left = index as i32 * PANEL;
            let x0 = left + LABEL;
            let title = match form {
                Form::Sync => "sync: a plain loop of calls",
                _ => "async: awaited in a loop inside one block_on (current-thread tokio)",
            };
            root.draw(&Text::new(title, (left + 12, 50), font(13).color(&BLACK)))?;
            let bottom = TOP + panel_height(blocks);
            let mut tick = lo;
            while tick <= hi * 1.001 {
                let x = x0 + scale(tick);
                root.draw(&PathElement::new(vec![(x, TOP - 4), (x, bottom)], GRID))?;
                let text = font(10).color(&RGBColor(120, 120, 120)).pos(Pos::new(HPos::Center, VPos::Top));
                root.draw(&Text::new(format!("{tick}"), (x, bottom + 2), text))?;
                tick *= 10.0;
            }
            let mut y = TOP;
            for block in blocks {
                root.draw(&Text::new(block.title, (left + 12, y + 3), font(12).color(&BLACK)))?;
                y += TITLE;
                for bar in &block.bars {
                    let label = font(11).color(&BLACK).pos(Pos::new(HPos::Right, VPos::Center));
                    root.draw(&Text::new(bar.label, (x0 - 6, y + ROW / 2), label))?;
                    let value = font(10).color(&RGBColor(60, 60, 60)).pos(Pos::new(HPos::Left, VPos::Center));
                    match bar.value {
                        Some(v) => {
                            let colour = if bar.ours {
                                OURS
                            } else if block.title.starts_with("harness") {
                                FLOOR
                            } else {
                                ANCHOR
                            };
                            let end = x0 + scale(v).max(1);
                            root.draw(&Rectangle::new([(x0, y + 2), (end, y + ROW - 2)], colour.filled()))?;
                            root.draw(&Text::new(cell(Some(v)), (end + 4, y + ROW / 2), value))?;
                        }
                        None => root.draw(&Text::new("no figure", (x0 + 4, y + ROW / 2), value))?,
                    }
                    y += ROW;
                }
                y += GAP;
            }
        }
        root.present()?;
    }
    Ok(out)
}
