//! Line charts for evaluation reports, written as both SVG and PNG.
//!
//! The SVG is the reference output: its text is rendered by the viewer, so it needs no font on
//! this machine. The PNG is rasterised here and needs a TrueType font, looked up once per process
//! (the `MNEMOS_PLOT_FONT` file first, then common system locations). Without one the PNG is
//! still drawn, without any text, and [`PlotOutput::notes`] says so — the chart never silently
//! loses its labels.
//!
//! Layout does not depend on measuring text with plotters (its caption and legend helpers fail
//! without a font), so the SVG and the PNG share one layout whatever fonts exist.
//!
//! Data problems that still leave something to draw (non-finite values, empty series, points
//! outside a fixed `y_range`) are reported as notes; a chart with nothing to draw, or a log-scale
//! x axis with x <= 0, is an error.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Width of both output images, in pixels.
pub const CHART_WIDTH: u32 = 800;
/// Height of both output images, in pixels.
pub const CHART_HEIGHT: u32 = 500;

/// Environment variable naming a `.ttf`/`.otf` file to use for PNG text before searching the
/// system.
pub const FONT_ENV: &str = "MNEMOS_PLOT_FONT";

/// The family name every text style asks for; the discovered font is registered under it.
const FONT_FAMILY: &str = "sans-serif";
const TITLE_SIZE: f64 = 24.0;
const AXIS_DESC_SIZE: f64 = 18.0;
const TICK_SIZE: f64 = 15.0;
const LEGEND_SIZE: f64 = 16.0;
/// Height reserved above the chart for the title.
const TITLE_BAND: i32 = 44;
const LEGEND_ROW: i32 = 24;
/// Legend names longer than this are shortened so the plot keeps most of the width.
const LEGEND_MAX_CHARS: usize = 44;

/// One named line of a chart; points are drawn in the order given.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Shown in the legend.
    pub name: String,
    /// `(x, y)` pairs. Non-finite pairs are skipped with a note.
    pub points: Vec<(f64, f64)>,
}

/// What to draw: one or more series on shared axes.
#[derive(Debug, Clone, PartialEq)]
pub struct LineChart {
    /// Shown above the chart.
    pub title: String,
    /// Description under the x axis.
    pub x_label: String,
    /// Description beside the y axis.
    pub y_label: String,
    /// The lines, each with its own colour and marker shape.
    pub series: Vec<Series>,
    /// Logarithmic x axis; every x must then be > 0.
    pub log_x: bool,
    /// Fixed y axis `(low, high)`; lines are clipped to it. `None` fits the data.
    pub y_range: Option<(f64, f64)>,
}

/// The files written and what had to be left out or degraded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlotOutput {
    /// `<dir>/<stem>.svg`
    pub svg: PathBuf,
    /// `<dir>/<stem>.png`
    pub png: PathBuf,
    /// Human-readable notes: skipped points, dropped series, PNG drawn without text.
    pub notes: Vec<String>,
}

/// Why no chart was written.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// No series, or no series with a finite point.
    #[error("chart {title:?} has no finite points to draw")]
    NoData { title: String },
    /// A log-scale x axis cannot show x <= 0.
    #[error("chart {title:?} has a log-scale x axis but series {series:?} has x = {x}")]
    NonPositiveLogX {
        title: String,
        series: String,
        x: f64,
    },
    /// `y_range` is not a finite, non-empty interval.
    #[error("chart {title:?}: y_range ({low}, {high}) must be finite with low < high")]
    InvalidYRange { title: String, low: f64, high: f64 },
    /// The stem would not name a file inside the output directory.
    #[error("invalid file stem {stem:?}: must be a non-empty file name without path separators")]
    InvalidStem { stem: String },
    /// The output directory could not be created.
    #[error("cannot create {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// plotters failed to draw or save a file.
    #[error("drawing {} failed: {message}", path.display())]
    Draw { path: PathBuf, message: String },
}

/// Draws `chart` into `<dir>/<stem>.svg` and `<dir>/<stem>.png` (creating `dir`), both
/// [`CHART_WIDTH`] x [`CHART_HEIGHT`].
pub fn write_line_chart(
    chart: &LineChart,
    dir: &Path,
    stem: &str,
) -> Result<PlotOutput, PlotError> {
    write_with_font(chart, dir, stem, font_state())
}

/// The font file PNG text is drawn with, if one was found (looked up on first use).
pub fn plot_font() -> Option<&'static Path> {
    match font_state() {
        FontState::Found(path) => Some(path),
        FontState::Missing { .. } => None,
    }
}

fn write_with_font(
    chart: &LineChart,
    dir: &Path,
    stem: &str,
    font: &FontState,
) -> Result<PlotOutput, PlotError> {
    validate_stem(stem)?;
    let prepared = prepare(chart)?;
    fs::create_dir_all(dir).map_err(|source| PlotError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let svg = dir.join(format!("{stem}.svg"));
    let png = dir.join(format!("{stem}.png"));
    let mut notes = prepared.notes.clone();

    let draw_error = |path: &Path, message: String| PlotError::Draw {
        path: path.to_path_buf(),
        message,
    };

    // SVG text never needs the font: the backend writes <text> elements as they are.
    let svg_root = SVGBackend::new(&svg, (CHART_WIDTH, CHART_HEIGHT)).into_drawing_area();
    draw_chart(&svg_root, &prepared, true)
        .and_then(|()| svg_root.present())
        .map_err(|e| draw_error(&svg, e.to_string()))?;
    drop(svg_root);

    let png_text = match font {
        FontState::Found(_) => true,
        FontState::Missing { searched } => {
            notes.push(format!(
                "PNG drawn without text: no TrueType font found in {} (set {FONT_ENV} to a .ttf \
                 file); the SVG has all text",
                searched
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            false
        }
    };
    let png_root = BitMapBackend::new(&png, (CHART_WIDTH, CHART_HEIGHT)).into_drawing_area();
    draw_chart(&png_root, &prepared, png_text)
        .and_then(|()| png_root.present())
        .map_err(|e| draw_error(&png, e.to_string()))?;
    drop(png_root);

    Ok(PlotOutput { svg, png, notes })
}

fn validate_stem(stem: &str) -> Result<(), PlotError> {
    let bad = stem.is_empty()
        || stem == "."
        || stem == ".."
        || stem.contains(['/', '\\'])
        || stem.contains('\0');
    if bad {
        return Err(PlotError::InvalidStem {
            stem: stem.to_string(),
        });
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Data preparation: everything that can fail or be noted happens here, before any drawing.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Marker {
    Circle,
    Triangle,
    Square,
    Cross,
}

const MARKERS: [Marker; 4] = [
    Marker::Circle,
    Marker::Triangle,
    Marker::Square,
    Marker::Cross,
];

/// Tableau 10: distinct hues that stay apart on white and in print.
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// A polyline or point set in data coordinates.
type Points = Vec<(f64, f64)>;

#[derive(Debug)]
struct PreparedSeries {
    name: String,
    color: RGBColor,
    marker: Marker,
    /// Visible pieces of the line after clipping to the y range.
    polylines: Vec<Points>,
    /// Points inside the y range.
    markers: Points,
}

#[derive(Debug)]
struct Prepared {
    title: String,
    x_label: String,
    y_label: String,
    log_x: bool,
    x_range: (f64, f64),
    y_range: (f64, f64),
    series: Vec<PreparedSeries>,
    notes: Vec<String>,
}

fn prepare(chart: &LineChart) -> Result<Prepared, PlotError> {
    let title = &chart.title;
    if let Some((low, high)) = chart.y_range {
        if !(low.is_finite() && high.is_finite() && low < high) {
            return Err(PlotError::InvalidYRange {
                title: title.clone(),
                low,
                high,
            });
        }
    }

    let mut notes = Vec::new();
    let mut kept: Vec<(usize, &Series, Points)> = Vec::new();
    for (index, series) in chart.series.iter().enumerate() {
        let finite: Points = series
            .points
            .iter()
            .copied()
            .filter(|(x, y)| x.is_finite() && y.is_finite())
            .collect();
        let skipped = series.points.len() - finite.len();
        if skipped > 0 {
            notes.push(format!(
                "series {:?}: skipped {skipped} of {} points with NaN or infinite values",
                series.name,
                series.points.len()
            ));
        }
        if chart.log_x {
            if let Some(&(x, _)) = finite.iter().find(|(x, _)| *x <= 0.0) {
                return Err(PlotError::NonPositiveLogX {
                    title: title.clone(),
                    series: series.name.clone(),
                    x,
                });
            }
        }
        if finite.is_empty() {
            notes.push(format!(
                "series {:?}: no finite points, left out of the chart",
                series.name
            ));
            continue;
        }
        kept.push((index, series, finite));
    }
    if kept.is_empty() {
        return Err(PlotError::NoData {
            title: title.clone(),
        });
    }

    let all = || kept.iter().flat_map(|(_, _, points)| points.iter());
    let x_range = padded_range(bounds(all().map(|p| p.0)), chart.log_x, 0.02);
    let y_range = match chart.y_range {
        Some(range) => range,
        None => padded_range(bounds(all().map(|p| p.1)), false, 0.05),
    };

    let series = kept
        .into_iter()
        .map(|(index, series, points)| {
            let (polylines, markers) = clip_to_y(&points, y_range, chart.log_x);
            let outside = points.len() - markers.len();
            if outside > 0 {
                notes.push(format!(
                    "series {:?}: {outside} points outside y_range ({}, {}) not shown",
                    series.name, y_range.0, y_range.1
                ));
            }
            PreparedSeries {
                name: series.name.clone(),
                color: PALETTE[index % PALETTE.len()],
                marker: MARKERS[index % MARKERS.len()],
                polylines,
                markers,
            }
        })
        .collect();

    Ok(Prepared {
        title: title.clone(),
        x_label: chart.x_label.clone(),
        y_label: chart.y_label.clone(),
        log_x: chart.log_x,
        x_range,
        y_range,
        series,
        notes,
    })
}

/// Minimum and maximum; callers pass a non-empty iterator of finite values.
fn bounds(values: impl Iterator<Item = f64>) -> (f64, f64) {
    values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    })
}

/// Widens `(lo, hi)` by `fraction` of its span on each side (in log space for a log axis), and
/// gives a single value a range around it so plotters never sees an empty axis.
fn padded_range((lo, hi): (f64, f64), log: bool, fraction: f64) -> (f64, f64) {
    if log {
        let (llo, lhi) = (lo.log10(), hi.log10());
        let pad = if lhi > llo {
            (lhi - llo) * fraction
        } else {
            0.3
        };
        (10f64.powf(llo - pad), 10f64.powf(lhi + pad))
    } else if hi > lo {
        let pad = (hi - lo) * fraction;
        (lo - pad, hi + pad)
    } else {
        let pad = if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
        (lo - pad, hi + pad)
    }
}

/// Splits a polyline into the pieces inside `low <= y <= high`, cutting segments at the bounds
/// (interpolated in log x when the axis is logarithmic, so cuts lie on the drawn line), and
/// returns them with the points inside the range.
///
/// Plotters does not clip to the plotting area, so without this a fixed y range would let lines
/// run over the axes and title.
fn clip_to_y(points: &[(f64, f64)], (low, high): (f64, f64), log_x: bool) -> (Vec<Points>, Points) {
    let inside = |y: f64| low <= y && y <= high;
    let markers: Vec<(f64, f64)> = points.iter().copied().filter(|p| inside(p.1)).collect();
    let to_t = |x: f64| if log_x { x.ln() } else { x };
    let from_t = |t: f64| if log_x { t.exp() } else { t };

    let mut polylines: Vec<Points> = Vec::new();
    let mut open = false;
    for pair in points.windows(2) {
        let ((xa, ya), (xb, yb)) = (pair[0], pair[1]);
        let dy = yb - ya;
        let (enter, exit) = if dy == 0.0 {
            if inside(ya) {
                (0.0, 1.0)
            } else {
                (1.0, 0.0)
            }
        } else {
            let (ta, tb) = ((low - ya) / dy, (high - ya) / dy);
            (ta.min(tb).max(0.0), ta.max(tb).min(1.0))
        };
        if enter > exit {
            open = false;
            continue;
        }
        let (t_a, t_b) = (to_t(xa), to_t(xb));
        let at = |s: f64| {
            if s == 0.0 {
                (xa, ya)
            } else if s == 1.0 {
                (xb, yb)
            } else {
                (from_t(t_a + (t_b - t_a) * s), ya + dy * s)
            }
        };
        match polylines.last_mut() {
            Some(line) if open && enter == 0.0 => line.push(at(exit)),
            _ => polylines.push(vec![at(enter), at(exit)]),
        }
        open = exit == 1.0;
    }
    (polylines, markers)
}

// ---------------------------------------------------------------------------------------------
// Drawing: one layout for both backends.

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// Draws the whole chart. With `text` false every text style is transparent, which plotters
/// skips before it would need a font.
fn draw_chart<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: &Prepared,
    text: bool,
) -> DrawResult<DB> {
    let ink: RGBAColor = if text { BLACK.to_rgba() } else { TRANSPARENT };
    root.fill(&WHITE)?;
    root.draw_text(
        &chart.title,
        &text_style(TITLE_SIZE, ink).pos(Pos::new(HPos::Center, VPos::Top)),
        (CHART_WIDTH as i32 / 2, 12),
    )?;

    let legend_width = legend_width(chart);
    let body = root.margin(TITLE_BAND, 10, 10, 10);
    let (body_width, _) = body.dim_in_pixel();
    let (plot_area, legend_area) = body.split_horizontally(body_width as i32 - legend_width);

    let mut builder = ChartBuilder::on(&plot_area);
    builder
        .margin(10)
        .x_label_area_size(50)
        .y_label_area_size(72);
    let (x0, x1) = chart.x_range;
    let (y0, y1) = chart.y_range;
    if chart.log_x {
        // plotters' own log ticks are the powers of ten, and a range inside one decade
        // (30k–60k tokens) would get no tick label at all.
        let axis = (x0..x1).log_scale().with_key_points(log_ticks(x0, x1));
        let mut context = builder.build_cartesian_2d(axis, y0..y1)?;
        draw_plot(&mut context, chart, ink)?;
    } else {
        let mut context = builder.build_cartesian_2d(x0..x1, y0..y1)?;
        draw_plot(&mut context, chart, ink)?;
    }
    draw_legend(&legend_area, chart, ink)
}

/// Tick positions for a log axis over `[lo, hi]`: 1-2-5 steps per decade, or every digit when
/// the range holds fewer than three of those, at most about ten.
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    if !(lo > 0.0 && hi > lo) {
        return vec![lo.max(f64::MIN_POSITIVE)];
    }
    let in_range = |mantissas: &[f64]| -> Vec<f64> {
        let (first, last) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
        (first..=last)
            .flat_map(|e| mantissas.iter().map(move |m| m * 10f64.powi(e)))
            .filter(|v| *v >= lo * (1.0 - 1e-9) && *v <= hi * (1.0 + 1e-9))
            .collect()
    };
    let mut ticks = in_range(&[1.0, 2.0, 5.0]);
    if ticks.len() < 3 {
        ticks = in_range(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]);
    }
    if ticks.len() > 12 {
        ticks = in_range(&[1.0]);
    }
    if ticks.is_empty() {
        ticks = vec![lo, hi];
    }
    ticks
}

fn text_style(size: f64, color: RGBAColor) -> TextStyle<'static> {
    (FONT_FAMILY, size).into_font().color(&color)
}

/// Mesh, axes and series inside the chart context; generic over the x axis so the linear and
/// logarithmic charts share it.
fn draw_plot<DB, X>(
    context: &mut ChartContext<'_, DB, Cartesian2d<X, RangedCoordf64>>,
    chart: &Prepared,
    ink: RGBAColor,
) -> DrawResult<DB>
where
    DB: DrawingBackend,
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let format = |v: &f64| format_tick(*v);
    context
        .configure_mesh()
        .x_desc(chart.x_label.as_str())
        .y_desc(chart.y_label.as_str())
        .x_labels(8)
        .y_labels(8)
        .x_label_formatter(&format)
        .y_label_formatter(&format)
        .label_style(text_style(TICK_SIZE, ink))
        .axis_desc_style(text_style(AXIS_DESC_SIZE, ink))
        .bold_line_style(RGBColor(215, 215, 215))
        .light_line_style(RGBColor(240, 240, 240))
        .axis_style(RGBColor(90, 90, 90))
        .draw()?;

    for series in &chart.series {
        let line = series.color.stroke_width(2);
        for polyline in &series.polylines {
            context.draw_series(LineSeries::new(polyline.iter().copied(), line))?;
        }
        let area = context.plotting_area();
        for &point in &series.markers {
            draw_marker(area, point, series.marker, series.color)?;
        }
    }
    Ok(())
}

fn draw_marker<DB, CT>(
    area: &DrawingArea<DB, CT>,
    at: CT::From,
    marker: Marker,
    color: RGBColor,
) -> DrawResult<DB>
where
    DB: DrawingBackend,
    CT: CoordTranslate,
{
    match marker {
        Marker::Circle => area.draw(&Circle::new(at, 4, color.filled())),
        Marker::Triangle => area.draw(&TriangleMarker::new(at, 5, color.filled())),
        Marker::Square => {
            area.draw(&(EmptyElement::at(at) + Rectangle::new([(-4, -4), (4, 4)], color.filled())))
        }
        Marker::Cross => area.draw(&Cross::new(at, 4, color.stroke_width(2))),
    }
}

/// Legend to the right of the plot so it never covers data.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    chart: &Prepared,
    ink: RGBAColor,
) -> DrawResult<DB> {
    let (width, _) = area.dim_in_pixel();
    let top = 20;
    let rows = chart.series.len() as i32;
    area.draw(&Rectangle::new(
        [(4, top), (width as i32 - 4, top + rows * LEGEND_ROW + 8)],
        RGBColor(200, 200, 200).stroke_width(1),
    ))?;
    let style = text_style(LEGEND_SIZE, ink).pos(Pos::new(HPos::Left, VPos::Center));
    for (row, series) in chart.series.iter().enumerate() {
        let y = top + 4 + LEGEND_ROW / 2 + row as i32 * LEGEND_ROW;
        area.draw(&PathElement::new(
            vec![(10, y), (38, y)],
            series.color.stroke_width(2),
        ))?;
        draw_marker(area, (24, y), series.marker, series.color)?;
        area.draw_text(&legend_name(&series.name), &style, (46, y))?;
    }
    Ok(())
}

fn legend_name(name: &str) -> String {
    if name.chars().count() <= LEGEND_MAX_CHARS {
        name.to_string()
    } else {
        let mut short: String = name.chars().take(LEGEND_MAX_CHARS - 1).collect();
        short.push('…');
        short
    }
}

/// Width for the legend column: the widest name, measured with the font when there is one and
/// estimated from its length otherwise, so the layout never depends on a font being present.
fn legend_width(chart: &Prepared) -> i32 {
    let font = (FONT_FAMILY, LEGEND_SIZE).into_font();
    let widest = chart
        .series
        .iter()
        .map(|s| {
            let name = legend_name(&s.name);
            match font.box_size(&name) {
                Ok((w, _)) => w as i32,
                Err(_) => (name.chars().count() as f64 * LEGEND_SIZE * 0.6) as i32,
            }
        })
        .max()
        .unwrap_or(0);
    (widest + 60).clamp(110, 400)
}

/// Tick labels: integers plainly, fractions with at most 4 decimals, very large or small values
/// in scientific notation.
fn format_tick(value: f64) -> String {
    let magnitude = value.abs();
    if value == 0.0 {
        "0".to_string()
    } else if !(1e-3..1e6).contains(&magnitude) {
        format!("{value:.1e}")
    } else if value.fract() == 0.0 {
        format!("{value:.0}")
    } else {
        let fixed = format!("{value:.4}");
        fixed
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    }
}

// ---------------------------------------------------------------------------------------------
// Font discovery for PNG text.

/// Whether PNG text can be drawn in this process.
#[derive(Debug, Clone, PartialEq, Eq)]
enum FontState {
    Found(PathBuf),
    Missing { searched: Vec<PathBuf> },
}

/// Well-known regular sans-serif fonts, tried before any directory walk.
const PREFERRED_FONTS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/liberation2/LiberationSans-Regular.ttf",
    "/usr/share/fonts/liberation-sans/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/noto/NotoSans-Regular.ttf",
    "/usr/share/fonts/noto/NotoSans-Regular.ttf",
    "/System/Library/Fonts/Supplemental/Arial.ttf",
    "/Library/Fonts/Arial.ttf",
    "C:\\Windows\\Fonts\\arial.ttf",
];

/// Directories walked (a few levels deep) when no preferred font exists.
const FONT_DIRS: &[&str] = &[
    "/usr/share/fonts",
    "/usr/local/share/fonts",
    "/Library/Fonts",
    "/System/Library/Fonts",
];

/// Font files larger than this are not read (large CJK collections would cost time and memory
/// for a few chart labels).
const MAX_FONT_BYTES: u64 = 32 * 1024 * 1024;

fn font_state() -> &'static FontState {
    static STATE: OnceLock<FontState> = OnceLock::new();
    STATE.get_or_init(register_system_font)
}

fn register_system_font() -> FontState {
    let mut explicit = Vec::new();
    if let Some(path) = std::env::var_os(FONT_ENV) {
        explicit.push(PathBuf::from(path));
    }
    explicit.extend(PREFERRED_FONTS.iter().map(PathBuf::from));
    let mut dirs: Vec<PathBuf> = FONT_DIRS.iter().map(PathBuf::from).collect();
    if let Some(home) = std::env::var_os("HOME") {
        let home = PathBuf::from(home);
        dirs.push(home.join(".local/share/fonts"));
        dirs.push(home.join(".fonts"));
    }

    let candidates = explicit
        .into_iter()
        .chain(dirs.iter().flat_map(|dir| font_files_under(dir)));
    for path in candidates {
        let Some(bytes) = read_font_file(&path) else {
            continue;
        };
        // plotters keeps fonts for the life of the process and wants 'static bytes; this runs
        // once per process (and once more per rejected file, which `read_font_file` makes rare).
        let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        if plotters::style::register_font(FONT_FAMILY, FontStyle::Normal, bytes).is_ok() {
            return FontState::Found(path);
        }
    }
    let mut searched: Vec<PathBuf> = Vec::new();
    if let Some(path) = std::env::var_os(FONT_ENV) {
        searched.push(PathBuf::from(path));
    }
    searched.extend(dirs);
    FontState::Missing { searched }
}

/// The file's bytes if it exists, is not too large and starts like a TrueType/OpenType font.
fn read_font_file(path: &Path) -> Option<Vec<u8>> {
    let meta = fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_FONT_BYTES {
        return None;
    }
    let bytes = fs::read(path).ok()?;
    let magic = bytes.get(..4)?;
    let known = [&[0, 1, 0, 0][..], b"OTTO", b"true", b"ttcf"];
    known.contains(&magic).then_some(bytes)
}

/// `.ttf`/`.otf` files under `dir` (up to four levels), regular sans-serif faces first, then by
/// path, so the pick is stable across runs.
fn font_files_under(dir: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, depth: usize, found: &mut Vec<PathBuf>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                if depth > 0 {
                    walk(&path, depth - 1, found);
                }
            } else if has_font_extension(&path) {
                found.push(path);
            }
        }
    }
    let mut found = Vec::new();
    walk(dir, 4, &mut found);
    found.sort_by_key(|path| (font_rank(path), path.clone()));
    found
}

fn has_font_extension(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("ttf") || e.eq_ignore_ascii_case("otf"))
}

/// Lower is better: an upright, regular-weight sans face reads best at small sizes.
fn font_rank(path: &Path) -> u8 {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let styled = [
        "bold",
        "italic",
        "oblique",
        "light",
        "condensed",
        "mono",
        "math",
    ]
    .iter()
    .any(|s| name.contains(s));
    match (name.contains("sans"), styled) {
        (true, false) => 0,
        (false, false) => 1,
        (true, true) => 2,
        (false, true) => 3,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_ticks_label_every_range() {
        assert_eq!(
            log_ticks(900.0, 110_000.0),
            vec![1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5]
        );
        // Inside one decade: every digit, so the axis still has labels.
        assert_eq!(log_ticks(28_000.0, 65_000.0), vec![3e4, 4e4, 5e4, 6e4]);
        assert_eq!(
            log_ticks(10.0, 1e9),
            (1..=9).map(|e| 10f64.powi(e)).collect::<Vec<_>>()
        );
        assert_eq!(log_ticks(31_000.0, 39_000.0), vec![31_000.0, 39_000.0]);
    }

    fn chart(series: Vec<Series>) -> LineChart {
        LineChart {
            title: "Recall by budget".to_string(),
            x_label: "token budget".to_string(),
            y_label: "recall@10".to_string(),
            series,
            log_x: false,
            y_range: None,
        }
    }

    fn series(name: &str, points: &[(f64, f64)]) -> Series {
        Series {
            name: name.to_string(),
            points: points.to_vec(),
        }
    }

    /// The contents of the SVG's `<text>` elements, trimmed.
    fn svg_texts(svg: &str) -> Vec<String> {
        svg.split("<text")
            .skip(1)
            .filter_map(|rest| {
                let body = rest.split_once('>')?.1;
                Some(body.split_once("</text>")?.0.trim().to_string())
            })
            .collect()
    }

    /// Width and height from the IHDR chunk, after checking the PNG signature.
    fn png_size(bytes: &[u8]) -> (u32, u32) {
        assert!(bytes.len() > 24, "PNG too short: {} bytes", bytes.len());
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        assert_eq!(&bytes[12..16], b"IHDR");
        let width = u32::from_be_bytes([bytes[16], bytes[17], bytes[18], bytes[19]]);
        let height = u32::from_be_bytes([bytes[20], bytes[21], bytes[22], bytes[23]]);
        (width, height)
    }

    #[test]
    fn plot_writes_svg_and_png() {
        let dir = tempfile::tempdir().unwrap();
        let out_dir = dir.path().join("plots");
        let c = chart(vec![
            series("bm25", &[(1.0, 0.2), (2.0, 0.35), (4.0, 0.5)]),
            series("hybrid & rerank", &[(1.0, 0.3), (2.0, 0.45), (4.0, 0.62)]),
        ]);
        let out = write_line_chart(&c, &out_dir, "recall").unwrap();
        assert_eq!(out.svg, out_dir.join("recall.svg"));
        assert_eq!(out.png, out_dir.join("recall.png"));

        let svg = fs::read_to_string(&out.svg).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(80)]);
        assert!(svg.contains("Recall by budget"));
        assert!(svg.contains("bm25"));
        // The backend escapes markup in text.
        assert!(svg.contains("hybrid &amp; rerank"));
        assert!(svg.contains("token budget"));
        assert!(svg.contains("recall@10"));

        let png = fs::read(&out.png).unwrap();
        assert_eq!(png_size(&png), (CHART_WIDTH, CHART_HEIGHT));
        // Notes only report degradation; on a machine with a font there is none.
        if plot_font().is_some() {
            assert!(out.notes.is_empty(), "{:?}", out.notes);
        } else {
            assert!(out.notes[0].starts_with("PNG drawn without text"));
        }
    }

    #[test]
    fn plot_without_font_draws_png_without_text_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let c = chart(vec![series("bm25", &[(1.0, 0.2), (2.0, 0.4)])]);
        let missing = FontState::Missing {
            searched: vec![PathBuf::from("/nowhere/fonts")],
        };
        let out = write_with_font(&c, dir.path(), "bare", &missing).unwrap();
        assert_eq!(out.notes.len(), 1, "{:?}", out.notes);
        assert!(out.notes[0].starts_with("PNG drawn without text: no TrueType font found in"));
        assert!(out.notes[0].contains("/nowhere/fonts"));
        let svg = fs::read_to_string(&out.svg).unwrap();
        assert!(svg.contains("Recall by budget") && svg.contains("bm25"));
        let bare = fs::read(&out.png).unwrap();
        assert_eq!(png_size(&bare), (CHART_WIDTH, CHART_HEIGHT));

        // With a font the same chart's PNG has text, so its pixels differ.
        if let FontState::Found(path) = font_state() {
            let found = FontState::Found(path.clone());
            let with_text = write_with_font(&c, dir.path(), "text", &found).unwrap();
            assert!(with_text.notes.is_empty());
            assert_ne!(fs::read(&with_text.png).unwrap(), bare);
        }
    }

    #[test]
    fn plot_skips_nan_points_with_a_note() {
        let dir = tempfile::tempdir().unwrap();
        let c = chart(vec![
            series(
                "a",
                &[(1.0, 0.1), (2.0, f64::NAN), (f64::NAN, 0.3), (4.0, 0.4)],
            ),
            series("only nan", &[(f64::NAN, f64::NAN)]),
            series("inf", &[(1.0, f64::INFINITY), (2.0, 0.5)]),
        ]);
        let out = write_line_chart(&c, dir.path(), "nan").unwrap();
        let notes: Vec<&str> = out
            .notes
            .iter()
            .map(String::as_str)
            .filter(|n| !n.starts_with("PNG drawn without text"))
            .collect();
        assert_eq!(
            notes,
            [
                "series \"a\": skipped 2 of 4 points with NaN or infinite values",
                "series \"only nan\": skipped 1 of 1 points with NaN or infinite values",
                "series \"only nan\": no finite points, left out of the chart",
                "series \"inf\": skipped 1 of 2 points with NaN or infinite values",
            ]
        );
        let svg = fs::read_to_string(&out.svg).unwrap();
        let texts = svg_texts(&svg);
        assert!(texts.contains(&"a".to_string()), "{texts:?}");
        assert!(texts.contains(&"inf".to_string()), "{texts:?}");
        assert!(!svg.contains("only nan"));
        // The data range ignores the skipped values: y spans 0.1..0.5 plus padding.
        let prepared = prepare(&c).unwrap();
        assert!(
            (prepared.y_range.0 - 0.08).abs() < 1e-9,
            "{:?}",
            prepared.y_range
        );
        assert!(
            (prepared.y_range.1 - 0.52).abs() < 1e-9,
            "{:?}",
            prepared.y_range
        );
    }

    #[test]
    fn plot_rejects_charts_with_nothing_to_draw() {
        let dir = tempfile::tempdir().unwrap();
        for c in [
            chart(vec![]),
            chart(vec![series("empty", &[])]),
            chart(vec![series("nan", &[(f64::NAN, 1.0)])]),
        ] {
            let err = write_line_chart(&c, dir.path(), "none").unwrap_err();
            assert!(matches!(err, PlotError::NoData { .. }), "{err}");
        }
        assert!(!dir.path().join("none.svg").exists());
    }

    #[test]
    fn plot_log_x_rejects_non_positive_x() {
        let dir = tempfile::tempdir().unwrap();
        for bad_x in [0.0, -3.0] {
            let mut c = chart(vec![
                series("ok", &[(1.0, 1.0), (10.0, 2.0)]),
                series("bad", &[(bad_x, 1.0), (10.0, 2.0)]),
            ]);
            c.log_x = true;
            let err = write_line_chart(&c, dir.path(), "log").unwrap_err();
            match err {
                PlotError::NonPositiveLogX { series, x, .. } => {
                    assert_eq!(series, "bad");
                    assert_eq!(x, bad_x);
                }
                other => panic!("unexpected error {other}"),
            }
        }
    }

    #[test]
    fn plot_log_x_draws_positive_data() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = chart(vec![series(
            "latency",
            &[(10.0, 1.0), (100.0, 2.5), (1000.0, 7.0), (10000.0, 30.0)],
        )]);
        c.log_x = true;
        let out = write_line_chart(&c, dir.path(), "log").unwrap();
        let svg = fs::read_to_string(&out.svg).unwrap();
        let texts = svg_texts(&svg);
        for tick in ["100", "1000", "10000"] {
            assert!(texts.contains(&tick.to_string()), "log ticks {texts:?}");
        }
        assert_eq!(png_size(&fs::read(&out.png).unwrap()), (800, 500));
    }

    #[test]
    fn plot_single_point_gets_a_range_around_it() {
        let dir = tempfile::tempdir().unwrap();
        let c = chart(vec![series("one", &[(5.0, 0.5)])]);
        let prepared = prepare(&c).unwrap();
        assert_eq!(prepared.x_range, (4.5, 5.5));
        assert_eq!(prepared.y_range, (0.45, 0.55));
        assert!(prepared.series[0].polylines.is_empty());
        assert_eq!(prepared.series[0].markers, [(5.0, 0.5)]);
        write_line_chart(&c, dir.path(), "one").unwrap();

        let zero = chart(vec![series("zero", &[(0.0, 0.0)])]);
        let prepared = prepare(&zero).unwrap();
        assert_eq!(prepared.x_range, (-1.0, 1.0));

        let mut log = chart(vec![series("log", &[(100.0, 1.0)])]);
        log.log_x = true;
        let (lo, hi) = prepare(&log).unwrap().x_range;
        assert!(lo < 100.0 && hi > 100.0 && lo > 0.0, "{lo}..{hi}");
    }

    #[test]
    fn plot_validates_y_range_and_stem() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = chart(vec![series("a", &[(1.0, 1.0)])]);
        for range in [
            (1.0, 1.0),
            (2.0, 1.0),
            (f64::NAN, 1.0),
            (0.0, f64::INFINITY),
        ] {
            c.y_range = Some(range);
            let err = write_line_chart(&c, dir.path(), "y").unwrap_err();
            assert!(matches!(err, PlotError::InvalidYRange { .. }), "{err}");
        }
        c.y_range = None;
        for stem in ["", ".", "..", "a/b", "a\\b"] {
            let err = write_line_chart(&c, dir.path(), stem).unwrap_err();
            assert!(matches!(err, PlotError::InvalidStem { .. }), "{err}");
        }
    }

    #[test]
    fn plot_clips_lines_to_fixed_y_range() {
        // Up through the top bound, back down: two visible pieces cut at y = 1.
        let points = [(0.0, 0.0), (1.0, 2.0), (2.0, 2.0), (3.0, 0.0)];
        let (lines, markers) = clip_to_y(&points, (0.0, 1.0), false);
        assert_eq!(
            lines,
            vec![vec![(0.0, 0.0), (0.5, 1.0)], vec![(2.5, 1.0), (3.0, 0.0)]]
        );
        assert_eq!(markers, [(0.0, 0.0), (3.0, 0.0)]);

        // Consecutive inside segments stay one polyline.
        let (lines, _) = clip_to_y(&[(0.0, 0.1), (1.0, 0.2), (2.0, 0.3)], (0.0, 1.0), false);
        assert_eq!(lines, vec![vec![(0.0, 0.1), (1.0, 0.2), (2.0, 0.3)]]);

        // Log x: the cut lies halfway in log space, i.e. at x = 10 between 1 and 100.
        let (lines, _) = clip_to_y(&[(1.0, 0.0), (100.0, 2.0)], (0.0, 1.0), true);
        assert_eq!(lines.len(), 1);
        assert!((lines[0][1].0 - 10.0).abs() < 1e-9, "{:?}", lines);

        let dir = tempfile::tempdir().unwrap();
        let mut c = chart(vec![series("s", &points)]);
        c.y_range = Some((0.0, 1.0));
        let out = write_line_chart(&c, dir.path(), "clip").unwrap();
        assert!(out
            .notes
            .contains(&"series \"s\": 2 points outside y_range (0, 1) not shown".to_string()));
    }

    #[test]
    fn plot_tick_labels_are_compact() {
        assert_eq!(format_tick(0.0), "0");
        assert_eq!(format_tick(1000.0), "1000");
        assert_eq!(format_tick(0.30000000000000004), "0.3");
        assert_eq!(format_tick(0.125), "0.125");
        assert_eq!(format_tick(-2.5), "-2.5");
        assert_eq!(format_tick(2e6), "2.0e6");
        assert_eq!(format_tick(1e-5), "1.0e-5");
    }

    #[test]
    fn plot_font_search_prefers_regular_sans_and_skips_non_fonts() {
        let dir = tempfile::tempdir().unwrap();
        let nested = dir.path().join("truetype/family");
        fs::create_dir_all(&nested).unwrap();
        for name in ["Serif.ttf", "Sans-Bold.ttf", "Sans.ttf", "notes.txt"] {
            fs::write(nested.join(name), b"not a font").unwrap();
        }
        let found = font_files_under(dir.path());
        let names: Vec<_> = found
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["Sans.ttf", "Serif.ttf", "Sans-Bold.ttf"]);
        // None of them is a real font, so none would be registered.
        assert!(found.iter().all(|p| read_font_file(p).is_none()));
        assert!(font_files_under(&dir.path().join("missing")).is_empty());
    }
}
