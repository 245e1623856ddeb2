//! What happened in a run: the ordered list of [`Event`]s the checkers read.
//!
//! A [`crate::fault::Fault`] is what a scenario injects; an `Event` is what happened.
//! Events are recorded in the order the single-threaded simulation produced them, with
//! the global simulated time, so a timeline is a pure function of scenario, seed and code.

use crate::fault::FaultKind;
use crate::NodeId;
use serde::{Deserialize, Serialize};

/// A node's role, by its own belief.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Campaigning or waiting in the election queue.
    Candidate,
    /// Believes it leads.
    Leader,
    /// Neither (not campaigning: just started, or backing off).
    Follower,
}

/// What a protected write does at the fenced resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WriteOp {
    /// A new leader announces its token and reads the sequence row.
    Claim,
    /// The scheduler's tick record number `n` of this leadership.
    Tick {
        /// The tick number within the leadership.
        n: u64,
    },
    /// The sequencer hands out `first..=last` (one batch of `next` requests).
    Seq {
        /// First sequence number of the batch.
        first: u64,
        /// Last sequence number of the batch.
        last: u64,
    },
    /// The job's checkpoint: segment `segment` is compacted, the cursor moves past it.
    Checkpoint {
        /// The segment done.
        segment: u64,
    },
}

/// Something that happened in a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// A scenario fault took effect.
    FaultApplied {
        /// Index of the fault in the scenario's `faults` list.
        index: usize,
        /// The fault's kind.
        kind: FaultKind,
        /// What it hit, resolved (a node name, or `a->b` for a link).
        target: String,
    },
    /// A fault with a duration ended (or a `heal` ended partitions).
    FaultHealed {
        /// Index of the fault in the scenario's `faults` list.
        index: usize,
        /// The fault's kind.
        kind: FaultKind,
        /// What it had hit.
        target: String,
    },
    /// A fault could not be applied (e.g. target `leader` while nobody led).
    FaultSkipped {
        /// Index of the fault.
        index: usize,
        /// Why.
        reason: String,
    },
    /// A node started a campaign.
    CampaignStarted {
        /// The node.
        node: NodeId,
    },
    /// A campaign ended without winning.
    CampaignFailed {
        /// The node.
        node: NodeId,
        /// Why.
        error: String,
    },
    /// A node's belief about its role changed.
    RoleChanged {
        /// The node.
        node: NodeId,
        /// The new role.
        role: Role,
        /// The fencing token, when it became leader.
        token: Option<u64>,
    },
    /// A leader stopped its protected writes.
    StoppedActing {
        /// The node.
        node: NodeId,
        /// The token it had acted under.
        token: u64,
        /// Why it stopped.
        reason: String,
        /// When (global µs) its leadership ended in its own view, when that was before
        /// this record: its deadline passed or it was told, while a write was in flight
        /// that it let finish first. Absent: it ended here.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lost_at_us: Option<i64>,
    },
    /// A node was killed (its tasks dropped).
    NodeKilled {
        /// The node.
        node: NodeId,
    },
    /// A killed node was started again from scratch.
    NodeRestarted {
        /// The node.
        node: NodeId,
    },
    /// A node stopped the world (a GC pause).
    NodePaused {
        /// The node.
        node: NodeId,
    },
    /// A paused node runs again.
    NodeResumed {
        /// The node.
        node: NodeId,
    },
    /// Background GC noise (`[noise.gc]`) stopped the world on a node: not a scripted
    /// fault. Its end is a `GcResumed`.
    GcPaused {
        /// The node.
        node: NodeId,
        /// How long the pause lasts.
        duration_ms: u64,
    },
    /// A GC-noise pause ended.
    GcResumed {
        /// The node.
        node: NodeId,
    },
    /// A leader started a step of the job (`[work.job]`): compacting one segment.
    JobStepStarted {
        /// The leader.
        node: NodeId,
        /// Its token.
        token: u64,
        /// The segment (the cursor it resumed from, or its previous step's + 1).
        segment: u64,
    },
    /// A job step's work finished; its checkpoint write comes next.
    JobStepDone {
        /// The leader.
        node: NodeId,
        /// Its token.
        token: u64,
        /// The segment.
        segment: u64,
        /// How long the step took on the node's clock.
        elapsed_ms: u64,
    },
    /// A leader gave up a job step half-way because it stopped leading: the work is
    /// lost and the next leader does the segment again.
    JobStepAbandoned {
        /// The leader.
        node: NodeId,
        /// Its token.
        token: u64,
        /// The segment.
        segment: u64,
        /// How long it had worked on it, on its clock.
        elapsed_ms: u64,
    },
    /// A leader gave its leadership up on purpose (a step-down), telling the backend.
    Released {
        /// The node.
        node: NodeId,
        /// The token it gave up.
        token: u64,
    },
    /// A leader asked to transfer its leadership has stopped its protected writes, its
    /// job's cursor published by its last checkpoint, and hands the leadership to its
    /// designated successor by the backend's primitive (its `Released` follows).
    HandedOver {
        /// The old leader.
        node: NodeId,
        /// The token it gave up.
        token: u64,
        /// The designated successor.
        to: NodeId,
        /// The job's cursor it published (the first segment not yet checkpointed; 0
        /// without a job).
        cursor: u64,
    },
    /// A transfer did not happen: the leader could not get the backend ready to hand
    /// over to its successor in time (or lost its leadership first), and leads on (or
    /// has already stopped for another reason).
    TransferAborted {
        /// The leader.
        node: NodeId,
        /// Its token.
        token: u64,
        /// The designated successor.
        to: NodeId,
        /// Why.
        reason: String,
    },
    /// A node's SWIM detector began to suspect a member (`[swim]`): it missed a probe
    /// and every indirect probe of one period.
    SwimSuspected {
        /// The observer.
        node: NodeId,
        /// The member suspected.
        member: NodeId,
        /// Which start of its process (1 at first; a restart is a new process).
        start: u64,
    },
    /// A node's SWIM detector declared a member down: its suspicion went unrefuted.
    SwimDown {
        /// The observer.
        node: NodeId,
        /// The member declared down.
        member: NodeId,
        /// Which start of its process.
        start: u64,
    },
    /// A node whose detector declared the leader down had the backend take its seat
    /// (etcd-lease: its lease revoked), before the lease would have expired.
    SwimEvicted {
        /// The node that asked.
        node: NodeId,
        /// The leader evicted.
        member: NodeId,
    },
    /// The SWIM messages a node sent over the last second of its clock (recorded each
    /// second, so that a report counts the detector's traffic).
    SwimTraffic {
        /// The node.
        node: NodeId,
        /// Messages sent.
        messages: u64,
    },
    /// Something that happened in one partition of a sharded fleet (`partitions = P`): a
    /// node's campaign, belief, stop or release for that partition, or a write to its
    /// rows at the resource. The checkers judge each partition's events apart, as a run
    /// of its own (see `checker/shards.rs`).
    Shard {
        /// The partition.
        partition: u32,
        /// What happened in it.
        inner: Box<Event>,
    },
    /// The lease service granted a lease.
    LeaseGranted {
        /// The node that asked.
        node: NodeId,
        /// The lease id.
        lease_id: i64,
        /// The TTL asked for.
        ttl_requested_ms: u64,
        /// The TTL granted (raised to the service's minimum).
        ttl_granted_ms: u64,
    },
    /// The lease service found a lease past its TTL on its own clock and deleted it.
    LeaseExpired {
        /// The lease id.
        lease_id: i64,
    },
    /// A lease was revoked by its holder.
    LeaseRevoked {
        /// The lease id.
        lease_id: i64,
    },
    /// A key was deleted at the lease service.
    KeyDeleted {
        /// The key.
        key: String,
        /// Its create revision (for an election key: the token of its holder).
        create_revision: i64,
        /// `expired`, `revoked` or `deleted`.
        cause: String,
    },
    /// The backend freed the leader's seat without deleting a key: a lock released (by
    /// its holder, or because its session ended), or a lease record cleared or left
    /// unrenewed past its duration. Election latency is timed from here.
    SeatVacated {
        /// The lock key or lease object.
        key: String,
        /// The fencing token of the holder that left it.
        token: u64,
        /// `released`, `expired`, `destroyed`, ...
        cause: String,
    },
    /// A node sent a protected write.
    WriteAttempted {
        /// The node.
        node: NodeId,
        /// The token it carried.
        token: u64,
        /// What it writes.
        op: WriteOp,
    },
    /// The fenced resource accepted a write.
    WriteAccepted {
        /// The writer.
        node: NodeId,
        /// The token it carried.
        token: u64,
        /// The highest token accepted before this write.
        max_token: u64,
        /// What was written.
        op: WriteOp,
    },
    /// A sequencer batch took effect in a replicated log (raft with `sequencer = "log"`):
    /// the first time any node applied the entry, which is after it was committed and
    /// before anyone could be told of it. Checkers read it as an accepted `seq` write.
    BatchCommitted {
        /// The node that proposed it (the leader of its term).
        node: NodeId,
        /// The term it was proposed in: its token.
        token: u64,
        /// Its position in the log.
        index: u64,
        /// First sequence number of the batch.
        first: u64,
        /// Last sequence number of the batch.
        last: u64,
    },
    /// A leader was told its batch committed and handed its numbers out. The batch's
    /// effect is its `BatchCommitted` (earlier, or at the same time); a batch that no
    /// leader handed out (its proposer died or was deposed before it heard) took numbers
    /// nobody received, and is no leader's act.
    BatchHandedOut {
        /// The leader.
        node: NodeId,
        /// Its term.
        token: u64,
        /// First sequence number of the batch.
        first: u64,
        /// Last sequence number of the batch.
        last: u64,
    },
    /// The replicated log refused a leader's batch: the leader no longer led the term it
    /// acted under (it learned of a newer term before, or while, proposing). The log's
    /// own fencing, the counterpart of a resource's `WriteRejected`.
    BatchRefused {
        /// The leader.
        node: NodeId,
        /// The term it acted under.
        token: u64,
    },
    /// A leader answered a read from its own applied state, without a quorum round trip,
    /// because its leader lease held on its clock.
    ReadServed {
        /// The node that answered.
        node: NodeId,
        /// Its term.
        token: u64,
        /// The value it read: the last sequence number its state machine had applied.
        value: u64,
        /// When the client sent the read (global simulated µs): a read must reflect every
        /// batch committed before this.
        sent_at_us: i64,
        /// How many reads were answered at once (the client sends the reads of one
        /// quantum together; they all get this value).
        count: u64,
    },
    /// The resource refused a sequencer batch that did not start above the sequence row's
    /// `last_seq`: a leader's write that timed out and landed late, overtaken by the same
    /// leader's next batch. The row only moves forward.
    SeqRefused {
        /// The writer.
        node: NodeId,
        /// Its token.
        token: u64,
        /// The batch's first number.
        first: u64,
        /// Its last number.
        last: u64,
        /// The row's `last_seq` when it arrived.
        last_seq: u64,
    },
    /// The fenced resource rejected a write whose token was below its `max_token`.
    WriteRejected {
        /// The writer.
        node: NodeId,
        /// The token it carried.
        token: u64,
        /// The highest token accepted so far.
        max_token: u64,
        /// What it tried to write.
        op: WriteOp,
    },
    /// An etcd member won an election: it leads the lease service from now on.
    EtcdLeaderElected {
        /// The member (`etcd-2`).
        member: String,
        /// Its Raft term.
        term: u64,
    },
    /// An etcd leader stepped down: it saw a higher term, or lost touch with a majority.
    EtcdLeaderLost {
        /// The member.
        member: String,
        /// The term it led.
        term: u64,
    },
    /// A new etcd leader promoted its lessor (its first entry committed): every lease now
    /// expires one election timeout plus its full TTL from now.
    EtcdLessorPromoted {
        /// The member.
        member: String,
        /// How many leases it extended.
        leases: usize,
    },
    /// An etcd member's process was killed (or, as `backend`, the one backend server's).
    MemberKilled {
        /// The member.
        member: String,
    },
    /// An etcd member's process started again (its term, vote and log kept on disk), or,
    /// as `backend`, the one backend server's (keeping what that server keeps).
    MemberRestarted {
        /// The member.
        member: String,
    },
    /// An etcd member (or, as `backend`, the backend server) was stopped (a pause); its
    /// clock runs on.
    MemberPaused {
        /// The member.
        member: String,
    },
    /// A paused etcd member (or the backend server) runs again.
    MemberResumed {
        /// The member.
        member: String,
    },
    /// The lease service's lessor renewed a lease (a keepalive it answered): a lease's
    /// overrun is measured from its last renewal.
    LeaseRenewed {
        /// The lease id.
        lease_id: i64,
    },
    /// A node run by `--node-cmd` broke a rule of the node contract
    /// (`docs/src/node-contract.md`) while the run went on: seen from outside, by the
    /// supervisor polling it.
    ContractBroken {
        /// The node.
        node: NodeId,
        /// The rule's name, as the contract's heading has it (`status`).
        rule: String,
        /// What it did.
        detail: String,
    },
    /// The first proof that a node run by `--node-cmd` had stepped down: the answer of
    /// the first `/status` poll that no longer saw it lead under its token. Its
    /// `role_changed` is stamped at the last poll that still saw it lead (the belief a
    /// poll proved); the step-down happened between the two. Handoffs are judged from
    /// this later edge, against the node (see `checker/failover.rs`).
    StepDownSeen {
        /// The node.
        node: NodeId,
    },
}

/// One timeline line: when, and what.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// Global simulated time in microseconds since the run started.
    pub at_us: i64,
    /// What happened.
    #[serde(flatten)]
    pub event: Event,
}

impl Entry {
    /// The time in milliseconds, as written in reports.
    pub fn at_ms(&self) -> f64 {
        self.at_us as f64 / 1000.0
    }
}

/// Where a streaming timeline hands each event as it is recorded (the run's checkers,
/// and the timeline file): a run never holds its timeline in memory.
pub trait EntrySink: Send {
    /// Takes the next event.
    fn entry(&mut self, e: &Entry);
}
