//! The report's rows and their text, Markdown and JSON forms.

use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;

/// Whether a GPU result matched the CPU reference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Check {
    /// This row is the CPU reference the others are checked against.
    Reference,
    /// The output equals the CPU reference's.
    Pass,
    /// The output differs; the text says where.
    Fail(String),
}

impl Check {
    /// `Pass` if `same`, else `Fail(what)`.
    pub fn from_equal(same: bool, what: &str) -> Self {
        if same {
            Check::Pass
        } else {
            Check::Fail(what.to_owned())
        }
    }

    fn text(&self) -> String {
        match self {
            Check::Reference => "reference".to_owned(),
            Check::Pass => "pass".to_owned(),
            Check::Fail(what) => format!("FAIL: {what}"),
        }
    }
}

/// One measured primitive on one backend.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// What was run, such as `ChaCha8 keystream to device memory`.
    pub primitive: String,
    /// Which backend and device.
    pub backend: String,
    /// How many items (blocks, leaves, points...) one run processes.
    pub items: u64,
    /// What an item is.
    pub item: &'static str,
    /// Bytes one run produces (0 when bytes mean nothing for the primitive).
    pub bytes: u64,
    /// Median time of one run, in seconds.
    pub seconds: f64,
    /// Throughput over the CPU reference row of the same primitive.
    pub speedup: Option<f64>,
    /// The check against the CPU reference.
    pub check: Check,
}

impl Row {
    /// Items per second.
    pub fn items_per_second(&self) -> f64 {
        self.items as f64 / self.seconds
    }

    /// Bytes per second.
    pub fn bytes_per_second(&self) -> f64 {
        self.bytes as f64 / self.seconds
    }
}

/// Builds a row; `time` is the median run time.
pub fn row(
    primitive: &str,
    backend: &str,
    items: u64,
    item: &'static str,
    bytes: u64,
    time: Duration,
    check: Check,
) -> Row {
    Row {
        primitive: primitive.to_owned(),
        backend: backend.to_owned(),
        items,
        item,
        bytes,
        seconds: time.as_secs_f64().max(1e-12),
        speedup: None,
        check,
    }
}

/// Fills in each row's speedup: its item rate over that of the reference row of the same
/// primitive (rows without one keep `None`).
pub fn set_speedups(rows: &mut [Row]) {
    let reference_rates: Vec<(String, f64)> = rows
        .iter()
        .filter(|r| r.check == Check::Reference)
        .map(|r| (r.primitive.clone(), r.items_per_second()))
        .collect();
    for row in rows.iter_mut().filter(|r| r.check != Check::Reference) {
        row.speedup = reference_rates
            .iter()
            .find(|(primitive, _)| *primitive == row.primitive)
            .map(|(_, reference)| row.items_per_second() / reference);
    }
}

/// A count with a metric prefix: `1.50 G`.
pub fn metric(value: f64) -> String {
    const PREFIXES: [(f64, &str); 5] =
        [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")];
    for (scale, prefix) in PREFIXES {
        if value >= scale {
            return format!("{:.2} {prefix}", value / scale);
        }
    }
    format!("{value:.2} ")
}

/// A duration in the unit that suits it.
pub fn duration(seconds: f64) -> String {
    if seconds >= 1.0 {
        format!("{seconds:.3} s")
    } else if seconds >= 1e-3 {
        format!("{:.3} ms", seconds * 1e3)
    } else {
        format!("{:.1} µs", seconds * 1e6)
    }
}

/// A power-of-two count as `2^k`, anything else as a number.
pub fn count(n: u64) -> String {
    if n.is_power_of_two() && n >= 1024 {
        format!("2^{}", n.trailing_zeros())
    } else {
        n.to_string()
    }
}

const HEADER: [&str; 7] = [
    "primitive",
    "backend",
    "size",
    "time",
    "throughput",
    "speedup",
    "check",
];

fn cells(row: &Row) -> [String; 7] {
    let size = if row.bytes > 0 {
        format!(
            "{} {} ({}B)",
            count(row.items),
            row.item,
            metric(row.bytes as f64)
        )
    } else {
        format!("{} {}", count(row.items), row.item)
    };
    let throughput = if row.bytes > 0 {
        format!(
            "{}B/s ({}{}/s)",
            metric(row.bytes_per_second()),
            metric(row.items_per_second()),
            row.item
        )
    } else {
        format!("{}{}/s", metric(row.items_per_second()), row.item)
    };
    [
        row.primitive.clone(),
        row.backend.clone(),
        size,
        duration(row.seconds),
        throughput,
        row.speedup
            .map(|s| format!("{s:.1}x"))
            .unwrap_or_else(|| "-".to_owned()),
        row.check.text(),
    ]
}

/// The rows as an aligned plain-text table.
pub fn text(rows: &[Row]) -> String {
    let all: Vec<[String; 7]> = rows.iter().map(cells).collect();
    let widths: Vec<usize> = (0..7)
        .map(|c| {
            all.iter()
                .map(|r| r[c].chars().count())
                .chain([HEADER[c].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cols: &[String]| {
        let mut out = String::new();
        for (c, text) in cols.iter().enumerate() {
            let _ = write!(out, "{text:<width$}  ", width = widths[c]);
        }
        out.trim_end().to_owned() + "\n"
    };
    let mut out = line(&HEADER.map(str::to_owned));
    out += &line(&widths.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>());
    for r in &all {
        out += &line(r);
    }
    out
}

/// The rows as a Markdown table.
pub fn markdown(rows: &[Row]) -> String {
    let mut out = format!("| {} |\n", HEADER.join(" | "));
    out += &format!("|{}\n", "---|".repeat(HEADER.len()));
    for r in rows {
        out += &format!("| {} |\n", cells(r).join(" | "));
    }
    out
}

/// The rows as an SVG bar chart: one bar per row, its length the throughput on a log scale,
/// reference rows grey, passing rows green, failing rows red, labelled with the primitive, backend and figure.
pub fn svg(rows: &[Row]) -> String {
    const BAR: f64 = 360.0;
    const ROW: f64 = 26.0;
    let rate = |r: &Row| {
        if r.bytes > 0 {
            r.bytes_per_second()
        } else {
            r.items_per_second()
        }
    };
    let rates: Vec<f64> = rows.iter().map(rate).filter(|x| *x > 0.0).collect();
    let low = rates
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min)
        .log10()
        .floor();
    let high = rates
        .iter()
        .copied()
        .fold(0.0, f64::max)
        .log10()
        .ceil()
        .max(low + 1.0);
    let labels: Vec<String> = rows
        .iter()
        .map(|r| format!("{} — {}", r.primitive, r.backend))
        .collect();
    // At most about 7.5 pixels a character at 12 px sans-serif.
    let longest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let label_width = 7.5 * longest as f64 + 24.0;
    let width = label_width + BAR + 160.0;
    let height = ROW * rows.len() as f64 + 50.0;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         font-family=\"sans-serif\" font-size=\"12\">\n\
         <text x=\"8\" y=\"18\" font-weight=\"bold\">Throughput (log scale; bytes/s, or items/s \
         where bytes mean nothing)</text>\n"
    );
    for (i, (r, label)) in rows.iter().zip(&labels).enumerate() {
        let y = 30.0 + ROW * i as f64;
        let length = if rate(r) > 0.0 {
            BAR * (rate(r).log10() - low) / (high - low)
        } else {
            0.0
        };
        let color = match r.check {
            Check::Reference => "#9e9e9e",
            Check::Pass => "#43a047",
            Check::Fail(_) => "#e53935",
        };
        let unit = if r.bytes > 0 {
            "B/s".to_owned()
        } else {
            format!("{}/s", r.item)
        };
        let label = label.replace('&', "&amp;").replace('<', "&lt;");
        let _ = writeln!(
            out,
            "<text x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"end\">{label}</text>\
             <rect x=\"{:.0}\" y=\"{:.0}\" width=\"{length:.1}\" height=\"{:.0}\" fill=\"{color}\"/>\
             <text x=\"{:.0}\" y=\"{:.0}\">{}{unit}</text>",
            label_width - 8.0,
            y + 15.0,
            label_width,
            y + 3.0,
            ROW - 8.0,
            label_width + length + 6.0,
            y + 15.0,
            metric(rate(r)),
        );
    }
    out + "</svg>\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<Row> {
        let mut rows = vec![
            row(
                "Op <a&b>",
                "CPU (2 threads)",
                1 << 22,
                "blocks",
                1 << 28,
                Duration::from_millis(20),
                Check::Reference,
            ),
            row(
                "Op <a&b>",
                "CUDA (Some GPU)",
                1 << 31,
                "blocks",
                1 << 37,
                Duration::from_millis(35),
                Check::Pass,
            ),
            row(
                "Other",
                "CUDA (Some GPU)",
                1000,
                "points",
                0,
                Duration::from_micros(50),
                Check::Fail("differs".into()),
            ),
        ];
        set_speedups(&mut rows);
        rows
    }

    #[test]
    fn speedup_is_the_rate_over_the_reference_rate() {
        let rows = sample();
        assert_eq!(rows[0].speedup, None);
        let expected = ((1u64 << 31) as f64 / 0.035) / ((1u64 << 22) as f64 / 0.020);
        assert!((rows[1].speedup.unwrap() - expected).abs() < 1e-9);
        assert_eq!(rows[2].speedup, None);
    }

    #[test]
    fn every_form_shows_every_row() {
        let rows = sample();
        let text = text(&rows);
        let markdown = markdown(&rows);
        for form in [&text, &markdown] {
            assert!(form.contains("2^22 blocks"), "{form}");
            assert!(form.contains("FAIL: differs"), "{form}");
            assert!(form.contains("292.6x"), "{form}");
        }
        assert_eq!(markdown.lines().count(), 2 + rows.len());
        let svg = svg(&rows);
        assert_eq!(svg.matches("<rect").count(), rows.len());
        assert!(
            svg.contains("Op &lt;a&amp;b&gt;") || svg.contains("Op &lt;a&amp;b>"),
            "{svg}"
        );
        assert!(!svg.contains("<a&b>"));
    }

    #[test]
    fn units_scale() {
        assert_eq!(metric(3.88e12), "3.88 T");
        assert_eq!(metric(999.0), "999.00 ");
        assert_eq!(duration(0.0000364), "36.4 µs");
        assert_eq!(duration(2.5), "2.500 s");
        assert_eq!(count(1 << 20), "2^20");
        assert_eq!(count(1000), "1000");
    }
}
