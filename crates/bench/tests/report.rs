//! The chart and tables of the user-shaped rows: every group and row appears, a missing figure is
//! said rather than drawn as zero, the ratio is the best anchor of the same form over ours.

use bench::report::{self, Figures, GROUPS, Metric};
use bench::{CASES, Form};

fn figures_for_every_row(value: impl Fn(&str) -> f64) -> Figures {
    let mut figures = Figures::default();
    for case in CASES.iter().filter(|c| c.group.starts_with("user_")) {
        figures.instructions.insert(case.id(), value(case.name));
        figures.nanoseconds.insert(case.id(), value(case.name) / 10.0);
        figures.allocations.insert(case.id(), 0.0);
    }
    figures
}

#[test]
fn the_chart_draws_every_single_thread_row_in_its_panel() {
    let figures = figures_for_every_row(|name| if name.starts_with("ours") { 50.0 } else { 500.0 });
    let svg = report::svg(&figures, Metric::Instructions, "test").expect("draws");
    for &(_, title) in GROUPS {
        assert!(svg.contains(title), "{title} missing");
    }
    let rows = CASES.iter().filter(|c| c.group.starts_with("user_") && c.form != Form::MultiThread).count();
    // One filled rectangle per bar, plus the background.
    assert_eq!(svg.matches("<rect").count(), rows + 1);
    assert!(!svg.contains("no figure"));
    assert!(svg.contains("lower is better"));
}

#[test]
fn a_row_without_a_figure_says_so() {
    let mut figures = figures_for_every_row(|_| 100.0);
    figures.instructions.remove("user_timeout/ours_async");
    let svg = report::svg(&figures, Metric::Instructions, "test").expect("draws");
    assert_eq!(svg.matches("no figure").count(), 1);
}

#[test]
fn the_blocks_put_ours_first_and_split_sync_from_async() {
    let figures = figures_for_every_row(|_| 1.0);
    let [(sync, sync_blocks), (awaited, awaited_blocks)] = report::blocks(&figures, Metric::Instructions);
    assert_eq!((sync, awaited), (Form::Sync, Form::Awaited));
    // The timeout and the hedge have no sync form.
    assert!(sync_blocks.iter().all(|b| !b.title.starts_with("timeout") && !b.title.starts_with("hedge")));
    assert_eq!(awaited_blocks.len(), GROUPS.len());
    for block in sync_blocks.iter().chain(&awaited_blocks).filter(|b| !b.title.starts_with("harness")) {
        assert!(block.bars[0].ours, "{}: ours first", block.title);
        assert!(block.bars[1..].iter().all(|bar| !bar.ours));
    }
}

#[test]
fn the_table_compares_ours_with_the_best_anchor_of_the_same_form() {
    let mut figures = figures_for_every_row(|_| 400.0);
    figures.instructions.insert("user_breaker_closed/ours_async".into(), 100.0);
    figures.instructions.insert("user_breaker_closed/recloser_async".into(), 200.0);
    figures.instructions.insert("user_breaker_closed/recloser_sync".into(), 10.0);
    let table = report::markdown(&figures);
    let row = table
        .lines()
        .find(|l| l.starts_with("| circuit breaker, closed | async | **resilience4cata**"))
        .expect("the async breaker row");
    assert!(row.contains("| recloser 200 |"), "{row}");
    assert!(row.ends_with("| 1.00 / 2.00 |"), "{row}");
    assert!(table.contains("| bare call | 40 | 1.0 |"), "{table}");
}

/// The contended table names every policy's row, anchors and floor that exist in `CASES`, and
/// judges the stack against the sum of its parts and against the floor of its shape, each less
/// the extra delegate calls.
#[test]
fn the_contended_table_uses_rows_that_exist_and_sums_the_stack() {
    use bench::contended::{POLICIES, STACK_PARTS, STACK_SHAPE};
    for policy in POLICIES {
        for name in [policy.ours, policy.floor].iter().chain(policy.anchors) {
            assert!(bench::find(&format!("contended/{name}")).is_some(), "{name} is a contended case");
        }
    }
    for name in STACK_PARTS.iter().chain(STACK_SHAPE).chain(&["stack_ours", "floor_call", "floor_stamped_add"]) {
        assert!(bench::find(&format!("contended/{name}")).is_some(), "{name} is a contended case");
    }
    let text = "# header\n\
        contended/floor_call\t2\t2.0\t2\t2\t2\t1.00\n\
        contended/retry_ours\t2\t3.0\t3\t3\t3\t1.00\n\
        contended/breaker_ours\t2\t4.0\t4\t4\t4\t1.00\n\
        contended/rate_limiter_ours\t2\t30.0\t30\t30\t30\t0.98\n\
        contended/bulkhead_ours\t2\t50.0\t50\t50\t50\t0.97\n\
        contended/stack_ours\t2\t80.0\t80\t80\t80\t0.99\n\
        contended/floor_two_lines\t2\t100.0\t100\t100\t100\t1.00\n\
        rate_limiter_pass/ours_sync\t1\t9.0\t9\t9\t9\t0.00\n";
    let rows = bench::contended::parse(text);
    assert_eq!(rows.len(), 7, "other groups and comments are skipped");
    assert_eq!(bench::contended::stack_parts(&rows), Some(3.0 + 4.0 + 30.0 + 50.0 - 3.0 * 2.0));
    let table = bench::contended::markdown(&rows);
    assert!(
        table.contains(
            "| stack (retry + breaker + rate limiter + bulkhead) | 80 | – | – | – | sum of parts | 81 | 0.99 |"
        ),
        "{table}"
    );
    assert_eq!(bench::contended::stack_shape(&rows), Some(100.0 + 3.0 + 4.0 - 2.0 * 2.0));
    assert!(table.contains("| the same stack | 80 | – | – | – | floor of its shape | 103 | 0.78 |"), "{table}");
    assert!(table.contains("| rate limiter, permits to spare | 30 | – | – | – | floor_fetch_add | – | – |"), "{table}");
    assert!(bench::contended::svg(&rows, "test").is_ok_and(|svg| svg.contains("resilience4cata")));
}

/// A contended run reports how much its contender ran beside the measured loop; a single-thread
/// run reports none.
#[test]
fn a_contended_run_reports_its_overlap() {
    let floor = bench::find("contended/floor_fetch_add").expect("the floor exists");
    let run = floor.run(200_000);
    assert!(run.overlap > 0.0, "the contender ran: {}", run.overlap);
    let single = bench::find("baseline/direct").expect("the baseline exists");
    assert_eq!(single.run(1_000).overlap, 0.0);
}
