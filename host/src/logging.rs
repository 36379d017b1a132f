//! The agent's log: one line per event on stderr, as text for people
//! (`kubenpu-agent: message`, with `warning:`, `error:` or `debug:` before
//! the message at those levels) or as JSON objects for log pipelines.

use std::fmt;

use tracing::{Event, Level, Subscriber};
use tracing_subscriber::{
    fmt::{FmtContext, FormatEvent, FormatFields, format::Writer},
    registry::LookupSpan,
};

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// `kubenpu-agent: message`.
    Text,
    /// One JSON object per line: timestamp, level, message.
    Json,
}

/// The least severe level written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogLevel {
    /// Errors only.
    Error,
    /// Errors and warnings: what needs an operator.
    Warn,
    /// Also what the agent does: hook, devices, vendors, pods restored.
    Info,
    /// Also every new key and CRI answer.
    Debug,
}

impl From<LogLevel> for Level {
    fn from(level: LogLevel) -> Self {
        match level {
            LogLevel::Error => Level::ERROR,
            LogLevel::Warn => Level::WARN,
            LogLevel::Info => Level::INFO,
            LogLevel::Debug => Level::DEBUG,
        }
    }
}

/// Installs the log for the process.
pub fn init(format: LogFormat, level: LogLevel) {
    let builder = tracing_subscriber::fmt()
        .with_max_level(Level::from(level))
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.event_format(Text).init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_target(false)
            .with_current_span(false)
            .init(),
    }
}

/// The text format.
struct Text;

impl<S, N> FormatEvent<S, N> for Text
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        context: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let severity = match *event.metadata().level() {
            Level::ERROR => "error: ",
            Level::WARN => "warning: ",
            Level::DEBUG | Level::TRACE => "debug: ",
            Level::INFO => "",
        };
        write!(writer, "kubenpu-agent: {severity}")?;
        context.format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}
