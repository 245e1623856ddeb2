//! The commands: what `sim run`'s siblings do, each in a file of its own (the command
//! line that calls them is [`crate::cli`]), and what the commands that run many
//! simulations share: a thread pool, a progress bar and Ctrl-C.

pub mod bench;
pub mod bisect;
pub mod compare;
pub mod interrupt;
pub mod matrix;
pub mod pool;
pub mod progress;
pub mod real;
pub mod search;
pub mod shrink;
pub mod stats;
pub mod sweep;
