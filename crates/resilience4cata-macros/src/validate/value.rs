//! Judging one `key = value` against its [`KeySpec`]: values are parsed first (a negative number is
//! a number), then range-checked with the key's own code.

use syn::{Expr, ExprLit, ExprUnary, Lit, LitStr, UnOp};

use crate::diag::{self, ATR_DURATION, ATR_KEY_NOT_KEYABLE, ATR_UNKNOWN_KEY, ATR_VALUE_KIND};
use crate::model::{KeySpec, PolicySpec, Value, ValueKind};
use crate::parse::{RawEntry, RawValue};

/// The key spec of `entry`, or `[R4C-ATR-002]` listing the valid keys and the closest one.
pub(crate) fn key_of(spec: &PolicySpec, entry: &RawEntry) -> syn::Result<&'static KeySpec> {
    let name = entry.key.to_string();
    if name == "key" && spec.key(&name).is_none() {
        return Err(not_keyable(spec, entry));
    }
    spec.key(&name).ok_or_else(|| {
        let valid: Vec<_> = spec.key_names().collect();
        let hint = closest(&name, &valid).map(|c| format!("; did you mean `{c}`?")).unwrap_or_default();
        diag::error(
            &entry.key,
            ATR_UNKNOWN_KEY,
            format!("unknown key `{name}` for `#[{}]`{hint} valid keys: {}", spec.name, valid.join(", ")),
        )
    })
}

/// `[R4C-ATR-070]`: `key` on a policy that keeps no state per key (SPEC §15).
fn not_keyable(spec: &PolicySpec, entry: &RawEntry) -> syn::Error {
    let name = spec.name;
    let message = format!(
        "`#[{name}]` takes no `key`: only `#[rate_limiter]`, `#[circuit_breaker]`, `#[bulkhead]` and \
         `#[adaptive_limit]` keep state per key; write `key = …` on one of those on this method instead"
    );
    diag::error(&entry.key, ATR_KEY_NOT_KEYABLE, message)
}

/// The value of `entry` for `key`, parsed then judged.
pub(crate) fn judge(key: &KeySpec, entry: &RawEntry) -> syn::Result<Value> {
    let expr = match (&entry.value, key.kind) {
        (RawValue::Pat(p), ValueKind::Pattern) => return Ok(Value::Pattern(p.clone())),
        (RawValue::Expr(e), ValueKind::Pattern) => return Err(wrong_kind(key, e)),
        (RawValue::Expr(e), _) => e,
        (RawValue::Pat(p), _) => return Err(wrong_kind(key, p)),
    };
    match key.kind {
        ValueKind::Count { min, max, code } => {
            let n = integer(expr).ok_or_else(|| wrong_kind(key, expr))?;
            in_range(key, expr, n as f64, (min as f64, max as f64), code)?;
            Ok(Value::Count(n as u64))
        }
        ValueKind::Number { min, max, code } => {
            let n = number(expr).ok_or_else(|| wrong_kind(key, expr))?;
            in_range(key, expr, n, (min, max), code)?;
            Ok(Value::Number(n))
        }
        ValueKind::Duration { nonzero } => duration(key, expr, nonzero),
        ValueKind::Enum { variants, .. } => enum_variant(key, expr, variants),
        ValueKind::Bool { code } => match expr {
            Expr::Lit(ExprLit { lit: Lit::Bool(b), .. }) => Ok(Value::Bool(b.clone())),
            _ => Err(diag::error(expr, code, format!("`{}` takes `true` or `false`, not `{}`", key.name, show(expr)))),
        },
        ValueKind::Str => match string(expr) {
            Some(s) if s.value().is_empty() => {
                Err(diag::error(expr, ATR_VALUE_KIND, format!("`{}` must not be empty", key.name)))
            }
            Some(s) => Ok(Value::Str(s.clone())),
            None => Err(wrong_kind(key, expr)),
        },
        ValueKind::FnPath => match expr {
            Expr::Path(p) if p.attrs.is_empty() => Ok(Value::Path(p.clone())),
            _ => Err(wrong_kind(key, expr)),
        },
        ValueKind::Expr => Ok(Value::Expr(expr.clone())),
        ValueKind::Pattern => unreachable!("handled above"),
    }
}

fn wrong_kind(key: &KeySpec, node: &dyn quote::ToTokens) -> syn::Error {
    let shown = show(node);
    diag::error(node, ATR_VALUE_KIND, format!("`{}` takes {}, not `{shown}`", key.name, key.kind.expected()))
}

/// `n` (the parsed value, shown as parsed: `-5`, `0.5`) within `min..=max`, else `code`.
fn in_range(key: &KeySpec, expr: &Expr, n: f64, (min, max): (f64, f64), code: &str) -> syn::Result<()> {
    let bound = if n < min {
        format!("at least {min}")
    } else if n > max || n.is_nan() {
        format!("at most {max}")
    } else {
        return Ok(());
    };
    Err(diag::error(expr, code, format!("`{}` must be {bound}, got {n}", key.name)))
}

fn duration(key: &KeySpec, expr: &Expr, nonzero: Option<&str>) -> syn::Result<Value> {
    let Some(lit) = string(expr) else {
        let hint = match expr {
            Expr::Lit(ExprLit { lit: Lit::Int(i), .. }) if !i.suffix().is_empty() => {
                format!("; write it as a string: `\"{i}\"`")
            }
            _ => String::new(),
        };
        let message = format!("`{}` takes a duration string such as \"100ms\", not `{}`{hint}", key.name, show(expr));
        return Err(diag::error(expr, ATR_DURATION, message));
    };
    let parsed = resilience4cata_duration::parse(&lit.value())
        .map_err(|e| diag::error(lit, ATR_DURATION, format!("`{}`: {e}", key.name)))?;
    let nanos = u64::try_from(parsed.as_nanos())
        .map_err(|_| diag::error(lit, ATR_DURATION, format!("`{}` is too long (more than 584 years)", key.name)))?;
    if let (0, Some(code)) = (nanos, nonzero) {
        return Err(diag::error(lit, code, format!("`{}` must be longer than zero", key.name)));
    }
    // The runtime's budget counts in tenths of the window, in a field sized for windows of 1 s
    // and more (`R4C-REG-003` at run time; here at compile time).
    if key.name == "budget_window" && nanos < 1_000_000_000 {
        return Err(diag::error(lit, crate::diag::ATR_BUDGET, "`budget_window` must be at least \"1s\""));
    }
    Ok(Value::Duration(nanos))
}

/// `Fixed`, `Backoff::Fixed`, `resilience4cata::Backoff::fixed`: the last segment, case-insensitive.
fn enum_variant(key: &KeySpec, expr: &Expr, variants: &'static [&'static str]) -> syn::Result<Value> {
    let last = match expr {
        Expr::Path(p) if p.qself.is_none() => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    };
    let found = last.and_then(|name| variants.iter().find(|v| v.eq_ignore_ascii_case(&name)));
    found.map(|v| Value::Enum(v)).ok_or_else(|| wrong_kind(key, expr))
}

/// An integer literal, possibly negated; `None` for anything else (floats included).
fn integer(expr: &Expr) -> Option<i128> {
    match expr {
        Expr::Lit(ExprLit { lit: Lit::Int(i), .. }) => {
            Some(i.base10_parse::<u128>().map_or(i128::MAX, |n| n.min(i128::MAX as u128) as i128))
        }
        Expr::Unary(ExprUnary { op: UnOp::Neg(_), expr, .. }) => integer(expr).map(|n| -n),
        Expr::Group(g) => integer(&g.expr),
        _ => None,
    }
}

/// A float or integer literal, possibly negated.
fn number(expr: &Expr) -> Option<f64> {
    match expr {
        Expr::Lit(ExprLit { lit: Lit::Float(f), .. }) => f.base10_parse::<f64>().ok(),
        Expr::Lit(ExprLit { lit: Lit::Int(_), .. }) => integer(expr).map(|n| n as f64),
        Expr::Unary(ExprUnary { op: UnOp::Neg(_), expr, .. }) => number(expr).map(|n| -n),
        Expr::Group(g) => number(&g.expr),
        _ => None,
    }
}

fn string(expr: &Expr) -> Option<&LitStr> {
    match expr {
        Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) => Some(s),
        Expr::Group(g) => string(&g.expr),
        _ => None,
    }
}

/// The value as written, for messages.
fn show(node: &dyn quote::ToTokens) -> String {
    node.to_token_stream().to_string()
}

/// The valid name closest to `name` (edit distance at most a third of its length, at least 2).
pub(crate) fn closest<'a>(name: &str, valid: &[&'a str]) -> Option<&'a str> {
    let limit = (name.len() / 3).max(2);
    valid
        .iter()
        .map(|v| (edit_distance(name, v), *v))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, v)| v)
}

/// Levenshtein distance over bytes (keys are ASCII).
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1).min(row[j] + 1).min(diagonal + usize::from(ca != cb));
            diagonal = above;
        }
    }
    row[b.len()]
}
