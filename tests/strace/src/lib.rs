//! A program's own ioctls, from strace's record of them, tallied by device
//! and ioctl number with how KubeNPU's tables count each: what the agent
//! must count for that program, found without the agent.
//!
//! The record is `strace -f -yy -X raw -e trace=ioctl -o FILE PROGRAM`:
//! `-yy` names each descriptor's file and device (`3</dev/dri/card0<char
//! 226:0>>`), `-X raw` prints requests as numbers (strace's names for
//! driver ioctls collide: it calls virtio-gpu's GETPARAM an etnaviv one).
//! The tables are the agent's own, as `kubenpuctl devices --json` and
//! `kubenpuctl plugins --json` print them, so a call counts here exactly
//! when a vendor's table lists its number for the device's driver.

mod parse;
mod tally;

pub use parse::{Call, Ending, Record, parse};
pub use tally::{Row, Tables, tally};
