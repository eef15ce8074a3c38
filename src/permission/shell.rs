//! Shell command parsing into permission subjects.
