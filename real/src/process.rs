//! Child processes that cannot outlive the run.
//!
//! Every child (etcd members, nodes, the resource, the load client) is started:
//! - in a **process group of its own**, so a signal reaches it and anything it started,
//!   and a Ctrl-C at the terminal (sent to the foreground group) does not reach it
//!   behind the supervisor's back;
//! - with **`PR_SET_PDEATHSIG` = SIGKILL**, so the kernel kills it when the supervisor dies
//!   however it dies (SIGKILL, Ctrl-C, an abort), when no destructor runs;
//! - wrapped in a [`ManagedChild`] that kills its group and reaps it on drop (the normal
//!   path, panics included).
//!
//! A signal reaches the child's whole **process tree**, not only its group: PostgreSQL's
//! postmaster puts every backend it forks in a session of its own (`setsid` in
//! `InitPostmasterChild`), so a group signal would stop or kill the postmaster and leave
//! its backends answering queries, or holding the shared memory that a restart on the
//! same data then refuses ("pre-existing shared memory block is still in use"). A kill is
//! a crash of everything the server ran, and waits until every process of the tree is
//! gone.
//!
//! The death signal fires when the *thread* that forked the child exits, not the process.
//! So every child is forked by one spawner thread that lives as long as the process:
//! spawning from a tokio blocking thread, which exits after idling, would kill the child.

use std::io;
use std::process::{Child, Command};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};

type SpawnRequest = (Command, mpsc::Sender<io::Result<Child>>);

/// The spawner thread's inbox (started on first use; it never exits).
fn spawner() -> &'static Mutex<mpsc::Sender<SpawnRequest>> {
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<SpawnRequest>>> = OnceLock::new();
    SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("baton-spawner".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    let _ = reply.send(cmd.spawn());
                }
            })
            .expect("can start the spawner thread");
        Mutex::new(tx)
    })
}

/// A child process in its own process group, killed with its group on drop.
#[derive(Debug)]
pub struct ManagedChild {
    name: String,
    child: Child,
    reaped: bool,
}

impl ManagedChild {
    /// Starts `cmd` as described in the module doc; `name` is for messages.
    pub fn spawn(name: &str, mut cmd: Command) -> io::Result<ManagedChild> {
        use std::os::unix::process::CommandExt;
        // SAFETY: getpid is async-signal-safe.
        let parent = unsafe { libc::getpid() };
        cmd.process_group(0);
        // SAFETY: only async-signal-safe calls (prctl, getppid, _exit) run between fork
        // and exec.
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                    return Err(io::Error::last_os_error());
                }
                // The supervisor may have died before the death signal was armed.
                if libc::getppid() != parent {
                    libc::_exit(1);
                }
                Ok(())
            });
        }
        let (tx, rx) = mpsc::channel();
        spawner()
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .send((cmd, tx))
            .map_err(|_| io::Error::other("the spawner thread is gone"))?;
        let child = rx
            .recv()
            .map_err(|_| io::Error::other("the spawner thread is gone"))??;
        Ok(ManagedChild {
            name: name.to_string(),
            child,
            reaped: false,
        })
    }

    /// The name given at spawn.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The process id (also its process group id).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The child's stdout, if it was piped.
    pub fn take_stdout(&mut self) -> Option<std::process::ChildStdout> {
        self.child.stdout.take()
    }

    /// Sends `sig` to the child's process group. A child already reaped is left alone
    /// (its pid may belong to someone else by now).
    pub fn signal(&self, sig: libc::c_int) -> io::Result<()> {
        if self.reaped {
            return Ok(());
        }
        self.signal_tree(sig).map(|_| ())
    }

    /// Sends `sig` to the child's group and to every descendant that left it, and
    /// returns the descendants. The group is stopped first, so that nothing in it forks
    /// while the tree is read, and continued after unless `sig` stops or kills it.
    fn signal_tree(&self, sig: libc::c_int) -> io::Result<Vec<u32>> {
        let group = self.child.id();
        killpg(group, libc::SIGSTOP)?;
        let tree = descendants(group);
        for &pid in &tree {
            // SAFETY: plain syscall. A pid that exited since the scan gives ESRCH.
            unsafe { libc::kill(pid as libc::pid_t, sig) };
        }
        killpg(group, sig)?;
        if sig != libc::SIGSTOP && sig != libc::SIGKILL {
            killpg(group, libc::SIGCONT)?;
        }
        Ok(tree)
    }

    /// True while the child has exited (or been killed) and not been reaped yet, or runs.
    /// Reaps it if it has exited.
    pub fn is_running(&mut self) -> bool {
        if self.reaped {
            return false;
        }
        match self.child.try_wait() {
            Ok(Some(_)) => {
                self.reaped = true;
                false
            }
            Ok(None) => true,
            Err(_) => false,
        }
    }

    /// True if the child is stopped (SIGSTOP), from `/proc/<pid>/stat`.
    pub fn is_stopped(&self) -> bool {
        if self.reaped {
            return false;
        }
        process_state(self.child.id()) == Some('T')
    }

    /// Kills the child's group with SIGKILL and reaps the child. Idempotent.
    pub fn kill(&mut self) {
        if self.reaped {
            return;
        }
        let tree = self.signal_tree(libc::SIGKILL).unwrap_or_default();
        let _ = self.child.wait();
        self.reaped = true;
        // The descendants that left the group are someone else's to reap; wait until each
        // is gone or a zombie (it holds nothing then), for at most 5 s.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while tree.iter().any(|&p| process_alive(p)) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    /// Asks the child to stop with `sig` (SIGTERM), waits up to `grace` for it to exit,
    /// then kills it.
    pub fn terminate(&mut self, sig: libc::c_int, grace: std::time::Duration) {
        if self.reaped {
            return;
        }
        let _ = self.signal(sig);
        // A stopped child cannot act on SIGTERM.
        let _ = self.signal(libc::SIGCONT);
        let deadline = std::time::Instant::now() + grace;
        while std::time::Instant::now() < deadline {
            if !self.is_running() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        self.kill();
    }
}

impl Drop for ManagedChild {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `killpg`, with a group that is gone already (ESRCH) as success.
fn killpg(group: u32, sig: libc::c_int) -> io::Result<()> {
    // SAFETY: plain syscall; the group id is the child's pid (process_group(0)).
    if unsafe { libc::killpg(group as libc::pid_t, sig) } != 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::ESRCH) {
            return Err(e);
        }
    }
    Ok(())
}

/// The parent pid of process `pid`, from `/proc/<pid>/stat`.
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command name's closing ')': the state, then the parent pid.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// Every live descendant of `root` (children, their children, ...), read from `/proc`.
fn descendants(root: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    let parents: Vec<(u32, u32)> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| Some((pid, parent_of(pid)?)))
        .collect();
    let mut out = vec![];
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for &(child, parent) in &parents {
            if parent == p && process_alive(child) {
                out.push(child);
                frontier.push(child);
            }
        }
    }
    out
}

/// The state letter of process `pid` from `/proc/<pid>/stat` (`R`, `S`, `T`, `Z`, ...),
/// or `None` if there is no such process.
pub fn process_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may contain spaces: the state follows the
    // last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.trim_start().chars().next()
}

/// True if a process with this pid exists and is not a zombie.
pub fn process_alive(pid: u32) -> bool {
    matches!(process_state(pid), Some(s) if s != 'Z' && s != 'X')
}

/// Pids of live processes whose command line mentions `needle` (scanning `/proc`): how a
/// test finds what a run left behind, since every child's command line names files under
/// the run's output directory and every etcd member its data directory.
pub fn processes_mentioning(needle: &str) -> Vec<u32> {
    let mut out = vec![];
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(cmd) = std::fs::read(e.path().join("cmdline")) {
            if String::from_utf8_lossy(&cmd).contains(needle) && process_alive(pid) {
                out.push(pid);
            }
        }
    }
    out
}

/// The temporary directory name `prefix<pid>-...` for this process: [`sweep_stale_dirs`]
/// can tell whose it was.
pub fn owned_prefix(prefix: &str) -> String {
    format!("{prefix}{}-", std::process::id())
}

/// Removes the directories `prefix<pid>-*` in the temporary directory whose process
/// `pid` is gone: what a run killed outright (SIGKILL, a power cut) could not remove.
/// Called when a run starts.
pub fn sweep_stale_dirs(prefix: &str) {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(prefix) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if pid != std::process::id() && !process_alive(pid) {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// The line a child prints on stdout once it listens: `LISTENING 127.0.0.1:<port>`.
const LISTENING: &str = "LISTENING ";

/// Tells the supervisor where this process listens (a child binds port 0, so only it
/// knows). Call once, after binding.
pub fn announce_listening(addr: std::net::SocketAddr) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{LISTENING}{addr}");
    let _ = out.flush();
}

impl ManagedChild {
    /// Waits up to `timeout` for the child's [`announce_listening`] line (its stdout must
    /// be piped) and returns the address. Fails if the child exits or stays silent.
    pub fn wait_listening(
        &mut self,
        timeout: std::time::Duration,
    ) -> io::Result<std::net::SocketAddr> {
        use std::io::BufRead;
        let stdout = self
            .take_stdout()
            .ok_or_else(|| io::Error::other(format!("{}: stdout not piped", self.name)))?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let r = std::io::BufReader::new(stdout)
                .read_line(&mut line)
                .map(|_| line);
            let _ = tx.send(r);
        });
        let line = rx.recv_timeout(timeout).map_err(|_| {
            io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "{} did not say where it listens within {timeout:?}",
                    self.name
                ),
            )
        })??;
        line.trim()
            .strip_prefix(LISTENING)
            .and_then(|a| a.parse().ok())
            .ok_or_else(|| {
                io::Error::other(format!(
                    "{} exited before it listened (said {:?})",
                    self.name,
                    line.trim()
                ))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_child_is_killed_and_reaped() {
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        let c = ManagedChild::spawn("sleep", cmd).unwrap();
        let pid = c.pid();
        assert!(process_alive(pid));
        drop(c);
        assert!(!process_alive(pid));
    }

    #[test]
    fn a_kill_reaches_a_descendant_that_left_the_group() {
        // The shell's child calls setsid, as PostgreSQL's backends do, so a group signal
        // alone would miss it.
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("grandchild");
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(format!(
            "setsid sh -c 'echo $$ > {}; exec sleep 30' & wait",
            pidfile.display()
        ));
        let mut c = ManagedChild::spawn("sh", cmd).unwrap();
        let t0 = std::time::Instant::now();
        let grandchild = loop {
            let s = std::fs::read_to_string(&pidfile).unwrap_or_default();
            if let Ok(p) = s.trim().parse::<u32>() {
                break p;
            }
            assert!(t0.elapsed().as_secs() < 5, "the grandchild never started");
            std::thread::sleep(std::time::Duration::from_millis(5));
        };
        // SAFETY: plain syscalls.
        let (group, session) = unsafe {
            (
                libc::getpgid(grandchild as i32),
                libc::getsid(grandchild as i32),
            )
        };
        assert_eq!(group, session, "the grandchild leads a session of its own");
        assert_ne!(group as u32, c.pid());
        c.signal(libc::SIGSTOP).unwrap();
        let t0 = std::time::Instant::now();
        while process_state(grandchild) != Some('T') && t0.elapsed().as_secs() < 5 {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        assert_eq!(process_state(grandchild), Some('T'), "SIGSTOP reached it");
        c.kill();
        assert!(!process_alive(grandchild), "the kill reached it and waited");
    }

    #[test]
    fn stop_and_continue_are_visible() {
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        let mut c = ManagedChild::spawn("sleep", cmd).unwrap();
        c.signal(libc::SIGSTOP).unwrap();
        let t0 = std::time::Instant::now();
        while !c.is_stopped() && t0.elapsed().as_secs() < 5 {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        assert!(c.is_stopped());
        c.signal(libc::SIGCONT).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(!c.is_stopped());
        assert!(c.is_running());
        c.kill();
        assert!(!c.is_running());
    }
}
