//! A deterministic simulation of the lock protocol: many contenders, each
//! running the real [`contender::Contender`] machine for its whole life
//! (the create, find-own after a lost answer, the directory, the data
//! check, the wait with the [`acquire::Acquire`] machine inside it, the
//! hold, the release or withdrawal, the directory's recycling), carried
//! through [`wire`], the same interpreter the library carries, against an
//! in-memory model of the ZooKeeper semantics the lock relies on, on seeded
//! random schedules.
//!
//! # The model
//!
//! The server answers the core's [`wire::Request`]s as ZooKeeper does, with
//! a [`wire::Reply`] or a [`wire::Error`]; what is not a contender's request
//! (a candidate's announcement, a client's removal of a watch, strangers'
//! writes and deletions) is the model's own.
//!
//! - One lock directory (`/locks/sim`), which may be missing, its parent
//!   too: a create or a listing under it then answers `NoNode`
//!   (`MakePath` makes the parent). It has an ACL (a number: 7 for a
//!   directory a lock makes, 9 for one an operator made beforehand, 0 for
//!   the server's default), its data (the release record, or a
//!   stranger's) and its data version, its child-version counter (the
//!   sequence of the next child), and is a container or persistent. The
//!   counter advances with every child created or deleted and sticks at
//!   `2147483647`; a run may start it near the limit or near
//!   `ordering::RECYCLE_THRESHOLD`, and may let one create at the limit get
//!   a negative sequence; a directory made again starts it from 0.
//! - The server removes the empty container once it has had a child (a
//!   step of the schedule); a server without containers (some schedules)
//!   answers `Unimplemented` to a container's create. Recycling
//!   (`Recreate`) is one transaction: delete the directory at the version
//!   read with its ACL (it fails with children, or at another version),
//!   create it persistent with the ACL the carrier kept from that `GetAcl`
//!   (as a client's call carries it), the server's default if none. In some
//!   schedules the directory's ACL (any but the default) denies some
//!   contenders WRITE: a transaction that writes the release record is
//!   refused them, whole.
//! - Nodes: name, ephemeral owner session (or a stranger's, persistent),
//!   czxid, mzxid, data and data version, whether a revocation request was
//!   written to it, and (for the history that grants are checked against)
//!   the zxid of its deletion and who deleted it. In a quarter of the
//!   schedules some locks give the nodes they make an ACL that denies
//!   their own identity READ (every other identity may read them):
//!   `getData` on such a node answers its lock `NoAuth` and sets no watch
//!   (a missing node is `NoNode` first), and so do the read of its node in
//!   the multi-read and a transaction's `check` of it; `exists`, listings,
//!   creates and deletions need no READ. Its waits check their own node
//!   with `exists` at every hand-off, and its keeper cannot watch its held
//!   node. In an eighth of the schedules some locks give their nodes an
//!   ACL that lets only their own identity READ: a wait on such a node is
//!   refused its watch (`NoAuth`) and polls it with `exists`, each look
//!   carried by [`wire::Poll`] as the driver carries it (a look is a step
//!   of its own, `Kind::Look`: the model's time is its steps, so a poll
//!   never pauses or gives up). Their release markers have their ACL too:
//!   a session that may not read one is not told of its creation (the
//!   server checks READ as it sends an event). In schedules with faults,
//!   an operator may take READ on a contender's node from its own session
//!   (`Kind::TakeRead`, a `setACL` while the node lives): from then on its
//!   reads say `NoAuth`, a watch it sets there or that a reconnection sets
//!   again is silent, and the watches it had fire unheard (the server
//!   checks READ as it sends an event, and tells no one of an ACL change).
//!   A grant resting on such a watch that its client could not know of
//!   (set while it read the node, or by a `SetWatches` after the handle
//!   read its node on that connection), with the node deleted by a
//!   stranger, is the limit docs/failure-model.md states, counted
//!   (`granted_unreadable_gone`), not a violation. In half the schedules the
//!   server is one of ZooKeeper 3.7.3, 3.8.4, 3.9.2 or later, whose `exists`
//!   of such a node that is there answers `NoAuth` (ZOOKEEPER-2590; of one
//!   that is gone, `None`).
//! - Sessions: connected, disconnected or expired. Each has the requests
//!   it sent that the server has not applied yet, and one outbound queue
//!   of replies and events delivered in order. The server applies one
//!   request at a time. A transaction (`multi`: all its operations in
//!   order, or none, refused at the first that fails with
//!   `Error::Refused { index, error }`) and the multi-read are one step
//!   each. A transaction's answer carries the stat of each node it creates
//!   (a server that leaves it out, ZOOKEEPER-4026, only in a scenario).
//! - One-shot watches per session: a data watch (`getData` on an existing
//!   node; none on a missing one), fired by deletion (`NodeDeleted`) and
//!   `setData` (`NodeDataChanged`); an `exists` watch, set whether the node
//!   exists or not, fired by its creation too (`NodeCreated`); on a node
//!   that exists it is a data watch (fired by deletion and `setData`). The
//!   client keeps a watch once its reply is delivered and the wire names
//!   whose it is ([`wire::Exchange::watch`]: one per watch the request
//!   sets), until its event comes; one the wire does not keep, or whose
//!   answer no exchange awaits any more, it drops at once and asks the
//!   server to remove (`removeWatches`). A wait may keep several watched
//!   nodes' watches at once (a semaphore's); each fires on its own. A watch
//!   that lingers ([`wire::Exchange::lingers`]: a semaphore's, a listing's)
//!   is not removed when dropped: the client keeps it detached (registered
//!   again after a reconnection, its event ignored) until it fires. A
//!   removal asked while a request of the session that sets a watch on the
//!   same node is in flight waits for its answer, as the library's client
//!   does (`World::send_unwatch`; its `Depot` defers it): cancelled if
//!   that request left its watch (the server's one watch is now the new
//!   request's), sent if it failed; a lost connection drops it.
//! - A child watch on the lock directory, which a listing with `watch`
//!   leaves (`Request::List { watch: true }`: a lock's acquire's listings,
//!   the create's pipelined one included; not a semaphore's, a downgrade's
//!   reader's, nor find-own's), if the directory exists: one per session on
//!   the server (`World::child_watches`; a second listing's while it is
//!   armed is the same), one-shot. Every child made or deleted fires it
//!   (`NodeChildrenChanged`): a contender's node, a release marker (made
//!   and deleted inside the release's transaction: the child watch fires
//!   at the marker's making, after the marker's `exists` watches and
//!   before the node's deletion), a stranger's node or marker; a deleted
//!   child's data watches fire first. The directory's deletion (the
//!   server's removal of the empty container, a recycle) fires it
//!   `NodeDeleted`. Every session may read the directory, so none is left
//!   unheard. The client keeps it under the name `CHILDREN` (`Rearm::Children`),
//!   one per session (a later listing's registration replaces a detached
//!   one: the server's one watch serves both, and the detached one's event
//!   is ignored); a listing's watch lingers ([`wire::Exchange::lingers`]),
//!   so letting it go sends no removal, and it stays with the client until
//!   the directory's next child change fires it. The directory tracks its
//!   pzxid (the zxid of its last child made or deleted, its making's at
//!   first), for the reconnection.
//! - `SetWatches { relative_zxid, data, exist }` (a wait's own node and
//!   marker watches in one request, and with `blind` the watched node's
//!   data watch too: `data: [mine, watched]`), as a 3.8 server applies it
//!   (`bench/setwatches_probe.py`): first, at once and before its answer
//!   (`Done`), in the order of its paths (data, then exist), the events of
//!   what changed since `relative_zxid`: a data path missing fires
//!   `NodeDeleted`, one whose mzxid is larger `NodeDataChanged`, an exist
//!   path that exists `NodeCreated`; every other path gets a watch, as
//!   `getData` (data) or `exists` on a missing node (exist) leave it. A node
//!   the session may not READ gets neither an event nor a watch (silent now
//!   and later; the answer is `Done` all the same): a watched node set
//!   `blind` that only its owner may read is such a one, and only the
//!   listing's child watch then tells of its deletion (the wait reads it
//!   once, `ReadWatched`, answered `NoNode`, or `NoAuth`, and then polls). The client registers
//!   its watches before it sends the request (as the library's client
//!   does), with whose they are ([`wire::Exchange::watch_of`]): an event
//!   that comes before the answer is held, and handed over with the answer
//!   if the wire keeps its watch (fed to the machine before the exchange
//!   settles, as the driver takes it), dropped with it otherwise (a lost
//!   answer: the client also asks the server to remove the watches not
//!   fired).
//! - Release markers: the release's transaction creates and deletes
//!   `<node>.released` before it deletes the node, so the `exists` watches
//!   on the marker fire (`NodeCreated`) before the node's deletion fires,
//!   in every session's queue. A stranger may make a node under the
//!   marker's name of a live node no contender waits on (and delete it
//!   again): a release of that node is then refused whole (`NodeExists`).
//!   A stranger's marker is a child of the directory like any: listings
//!   show it (the machine does not watch a marker it lists), and it keeps
//!   the directory from being empty (a container stays, a recycle is
//!   refused). (Making a marker while a contender watches for it forges a
//!   release: excluded, as a forged record.)
//! - Connection loss: of the requests in flight, a random prefix is
//!   applied, the rest is not; every reply not delivered yet becomes
//!   `Error::Unanswered`, undelivered events are lost, the session's state
//!   becomes `Disconnected`. Requests sent while disconnected wait for the
//!   reconnection. On reconnection (`Connected`) the client's watches are
//!   registered again, as the client does, with a `SetWatches` relative to
//!   the session's last zxid (the largest of the replies it got): a watched
//!   node deleted, or written after that, fires at once, an absent marker
//!   made meanwhile fires `NodeCreated`, a child watch fires
//!   `NodeDeleted` if the directory is gone and `NodeChildrenChanged` if
//!   its pzxid is larger (else it is set again), these events in any
//!   order; nodes the session may not read stay silent. (A data watch a read set is
//!   taken as relative to the node's mzxid the read saw: the same, since a
//!   write whose event the client lost came after every reply it saw.)
//! - Session expiry: its ephemeral nodes are deleted in one transaction
//!   (their watchers are notified), its watches dropped (its child watch
//!   too, so no event reaches it); the client sees the loss of connection,
//!   then the state `Expired` (and sometimes its data and child watches
//!   firing with it); every later request answers
//!   `Error::SessionEnded`.
//! - A stranger may write data to any contender node (sometimes a
//!   revocation request); write garbage, nothing, or the name of a node
//!   that is gone and that nobody waits on into the lock directory's data;
//!   delete any contender node; delete one that no other contender waits on
//!   (a semaphore's wait waits on every node it keeps a watch on, also
//!   while it lists again) and make a node of its own under its name (so
//!   carrying its token). In
//!   half the schedules the locks do not know yet that the directory's data
//!   is theirs, and in a quarter of those a stranger wrote other data there
//!   first. (Writing the name of a live node, or of one that someone waits
//!   on, into the directory's data forges a release; making again a node
//!   whose deletion woke a waiter puts a contender back ahead of the one it
//!   granted: documented protocol violations, excluded.)
//!
//! - Data nodes outside the lock directory, one per contender
//!   (`/data/c<n>`, made with the world), that holders' transactions write
//!   (any version); the model records every committed write with its zxid.
//!
//! Not modelled: time (a poll never gives up, and a look's answer lost
//! with its connection is seen only after the wait it served was
//! interrupted: the give-up and the count of lost looks are the unit
//! tests' of `wire::Poll`), a lock whose own nodes deny it READ on a
//! server whose `exists` checks READ (it cannot find its node after a lost
//! create: `docs/security.md`), several servers (`sync` is a no-op), several
//! acquires sharing one session, a client library that fails a request
//! sent while disconnected at once (here it waits for the reconnection).
//!
//! # The contenders
//!
//! Each contender is a lock handle that acquires again and again. An
//! acquire gets a `contender::Contender` with the contender's current
//! session (its id is the model's session index plus 1: a session of its
//! own for each, an expired one never reused), a token made of the
//! contender's number and the acquire's, and names `Layout::prefix("c<n>",
//! token, mode)` followed by the sequence, holding `contender::node_data`.
//! As the library's driver keeps it per `SharedLock`, the handle keeps
//! what its machines learnt of their own nodes' ACL
//! (`Contender::own_readable`, after every action), with the connection
//! it learnt it on, and tells its next acquires on that connection
//! (`Contender::with_own_readable`), until its session expires (a new
//! session is a new handle; a reconnection is a new connection, and an
//! acquire under way is told of it before its next request,
//! `wire::Run::next`): its first wait watches its node with
//! `getData`, later ones may set that watch and the marker's in one
//! `SetWatches` (`together`).
//!
//! The simulation carries the machine through [`wire`], as the library
//! does; it decides nothing of what goes to the server. Each acquire has
//! its [`wire::Wire`] and its [`wire::Run`], the loop the library's driver
//! steps: for every action, [`wire::Run::next`] says what to do (tell the
//! place, drop the marker's watch, wait, send the exchange
//! [`wire::Wire::exchange`] gives), and the library's interpreter,
//! [`wire::Carry`], carries the exchange:
//! the simulation sends what [`wire::Carry::poll_send`] gives, as it is
//! and when it gives it, as the library's carrier does (a request sent
//! again after a lost connection, a follow-up; the pause before a request
//! sent again is time, which the schedule's order stands for), hands
//! each answer to [`wire::Carry::answered`] with the watches it left, and
//! once the exchange is complete [`wire::Wire::settle`] feeds the machine
//! and gives its next action. The watches of each acquire are held in the
//! library's driver's table, [`wire::Watches`], with their nodes' names for
//! handles: those an exchange's answers left are kept when it ends
//! ([`wire::Watches::keep`]), those of a kind an exchange sets again go as
//! it is sent ([`wire::Watches::replace`]), the marker's when the machine no
//! longer needs it, and every one left when the wait ends; the carrier lets
//! go of each as the library's does (`World::let_go`: one that lingers is
//! left to fire). The keeper's read and watch of the held node is
//! [`wire::Wire::keep`], its answer [`wire::Exchange::held`]; a deadline is
//! [`wire::deadline`].
//! Events are taken as the core takes them: a watch's kind and the
//! session's state by [`acquire::NodeEvent::of`], the session's changes by
//! [`acquire::Event::of_session`]. A held node's watch goes to its keeper;
//! any other watch of an acquire is a handle of its carrier (`Acq::handles`,
//! as the library's watch future): set when an answer registers it, holding
//! its event once it fired until the driver's loop asks its table for it,
//! and done once it gave it (asked again, a check fails: the library's
//! future would panic); a watch of the client's that no handle holds
//! waiting fails a check as it fires (one the carrier neither kept nor let
//! go of). The session's changes wait in a slot that keeps the latest
//! (`Acq::states`, as the driver's `tokio::sync::watch` of the session's
//! state), cleared as the wait's watches are set. The loop asks: the wait
//! at once, by [`wire::Run::gather`], taking the first of all that arrived
//! (`Arrivals::next`, the order [`acquire::Arrived::in_order`]); an
//! exchange under way as it ends, by [`wire::Run::pump`], which feeds my
//! node's, the marker's and the session's with `Contender::event` and
//! leaves the watched nodes' for the next `Wait`, and then the machine is
//! told which watched nodes' watches are set and did not fire
//! (`Contender::watches_pending`). A deadline cuts the exchange under way
//! short and drops the watches its answers left, none left to linger.

//! Every machine follows its place in the queue
//! (`Contender::with_place(true)`); the carrier keeps the children of the
//! last listing answered to the acquire's exchange, the one the machine
//! decides on.
//!
//! A granted contender holds for as long as the scheduler likes. Its
//! keeper runs the core's `wire::Keeping`, the library's keeper's loop: it
//! watches its node (taking over the wait's watch on it, or setting one
//! with a read, at once: no clock runs here, where the library waits
//! `contender::FIRST_WATCH_AFTER` for a guard granted at its first look,
//! and the pauses between reads are the library's; and again after each
//! data change), feeds what it learns to `held_watch_set` and
//! `held_event`, and what it reports is checked (a deletion only of a node
//! that is gone, an unwatchable node only one whose ACL denies it READ);
//! the session's end is `held_lost`. The release is `release()`; a deadline, a `GiveUp` or a
//! failure is `withdraw()`. A contender may start again (in a new session
//! if its session expired; once one of its acquires found the directory's
//! data to be the lock's, the next ones do not check). In half the
//! schedules the contenders write every layout in turn (native, Curator's
//! read/write lock and mutex, kazoo): those in a peer's layout never write
//! the release record, as the peers never do, and nobody may take a
//! hand-off from a record behind them.
//!
//! A holding native writer may downgrade (`Contender::begin_replace`): its
//! acquire waits aside while a reader's acquire of its own (the real
//! machine, `Contender::replacing`) creates its node and lists; its
//! `Replace` is one transaction (check the node after the writer, create
//! the reader with the writer's sequence, delete the writer, delete the
//! reader's own node), retried after a lost connection, whose lost answers
//! are settled with `exists`. Its `GiveUp` keeps the writer node, which
//! holds on after the reader's withdrawal. The writer's keeper goes on
//! meanwhile, and the writer's machine is told how the downgrade ended
//! (`end_replace`). Contenders of the version before the marker do not
//! downgrade.
//!
//! A holder may commit a transaction (a move of the scheduler): unless its
//! guard knows the lock lost (`transaction::refused_before_sending`: then
//! it is not sent), `transaction::guarded` of its node and one `SetData` of
//! its data node, translated into the `contender::Op`s of one `multi` and
//! sent on its session like any request (cut or lost like the others, never
//! retried). Its answer is read as the library reads it:
//! `Guarded::answered_by` for a commit, `Guarded::failure` for a refusal.
//!
//! Odd-numbered contenders are also candidates of an election: a native
//! writer of theirs, once told of its grant, announces itself
//! (`election::rules::announcement`, a `setData` on its node, which its
//! waiters and its own keeper see as a data change). An observer (a move
//! of the scheduler) looks at the directory and names the head writer
//! (`ordering::leader`) only if its node carries its announcement
//! (`election::rules::announces`); checked: the contender owning it was
//! told of its grant and has not begun its release, and the terms it names
//! never go back.
//!
//! In a third of the schedules some contenders run the version before the
//! release marker (a rolling upgrade): their machines are built without
//! release markers (`Contender::with_release_markers(false)`: they never
//! watch one), and the carrier drops the marker's create and delete from
//! their release record's transaction, a model of that version's bytes.
//! Waiters behind them hand off on the record.
//!
//! The wire's exchange for the wait's `SetWatches` action sends the own
//! node's watch (`getData`), the marker's `exists` watch and the watched
//! node's, in that order, or, with `together` (the handle knows it may
//! read its nodes, and no write to my node was seen), the own node's and
//! the marker's in one `Request::SetWatches` relative to my node's czxid
//! (whose answer leaves both watches: `[Own, Marker]`), then the watched
//! node's; it completes once the last is answered; a marker's
//! `NodeCreated` is `Event::Released`. With `blind` (a writer's wait
//! right behind the node whose deletion alone grants it, whose deciding
//! listing left its child watch, not fired yet), the watched
//! node's data watch goes in that `SetWatches` too, unread, and no
//! `getData` follows (`[Own, Watched, Marker]`, or `[Own, Watched]`
//! with no marker to watch); the answer tells the machine
//! (`WatchesSet { blind }`). The listing's child watch is the carrier's
//! too (`Watch::Listing`, a handle of its own), kept in the wait's table
//! from the listing's answer; its event is taken only by a wait that
//! listens to it (`Contender::listens_to_listing`: its watched node set
//! blind and not read since; otherwise the handle is not asked and wakes
//! nothing), after the watched node's (`Source::Listing`): the wait then
//! reads it once (`ReadWatched`, `getData` with no watch). A marker's watch is dropped
//! (`removeWatches`) as soon as the machine says it is not needed
//! (`marker_watch_needed`), as the library's driver does, and at once when
//! the wire does not keep it (the marker exists when watched: a
//! stranger's) or its answer comes after its acquire ended.
//! A semaphore's `SetWatches` also sends a data watch on each of the
//! other watched nodes (`also`) it does not keep, after the watched
//! node's: the watched node's event may then come before the exchange is
//! complete. The watches it keeps ([`wire::Exchange::kept`]: set by an
//! earlier `SetWatches` of the wait and not fired, as the machine knows)
//! are not asked again: the carrier keeps them, and the events of theirs
//! that it holds for the wait, as the driver does; it drops the others
//! (detached: they linger).
//!
//! # A semaphore's schedules
//!
//! `semaphore_schedules_hold_n_permits_with_no_missed_wakeup_and_no_herd`
//! runs schedules (`semaphore_schedule`, seeds of their own) whose
//! contenders are all a counting semaphore's (`Contender::with_permits`):
//! N permits (1 to 4), 3N or 3N + 1 contenders (at least 3), every one a
//! native writer named by `Contender::prefix` (`<identity>@permits-<N>@<token>-W-`),
//! acquiring, holding and releasing again and again under the lock's
//! faults (lost connections, expiries, deadlines and `try` acquires,
//! strangers' writes, deletions and replacements, nodes that deny their
//! own lock READ, the directory missing, removed, recycled, its counter
//! near its limit, a listing limit, holders' transactions), never
//! downgrading. A stranger also makes nodes of its own in the directory
//! (`Move::ForeignNode`): a bare writer (one permit taken), a semaphore's
//! node carrying another permit count (every contender behind it fails
//! with `PermitsDisagree`), a name that is no contender's (ignored). As
//! the library's driver, the carrier lets go of the watches on the watched
//! nodes when a wait is over (`World::drop_wait_watches`); they linger.
//!
//! # What is checked
//!
//! After every step: never two holders where one is a writer, a *holder*
//! being a contender whose machine answered `Grant`, that has not started
//! to release, whose machine does not say lost, and whose node (its
//! czxid) still exists, or a downgrading writer whose node still exists,
//! or a downgrade's reader node from the transaction on (a foreign deletion or the session's expiry takes
//! the lock away before the machine knows). A machine says lost only once
//! its node is gone; a holder whose node is gone will be told (its watch is
//! set, fired, or to be set again at the reconnection, the keeper's read is
//! under way, or the session expired; or its node's ACL denies it READ and
//! its keeper stopped: only the session's end and the lease tell then, as
//! the library documents), and once told (the deletion's event, a read
//! finding no node or another czxid, the session's end) its machine says
//! lost. A holder whose node holds a revocation request (its data now)
//! will know it, as the library documents (`contender::FIRST_WATCH_AFTER`):
//! its machine says revoked, or an event of its node is on its way, the
//! keeper's read is under way, or the reconnection will fire its watch
//! (or its node's ACL denies it READ, or its session is over). When a
//! machine takes a node as its own (from a create's answer, or
//! find-own's), its session made that node. No wait is told twice of one
//! write to its own node (each data change its node's watch reports, by
//! the write's zxid, is newer than the last it was told of): after a
//! write, the wait watches its node with `getData`, where a `SetWatches`
//! relative to its czxid would fire again at once.
//!
//! At every grant: the state of the directory at the zxid of the message
//! that led to the grant (the listing, the event, the answer) grants this
//! contender (so its node existed then); `mark` is set exactly for a native
//! writer that waited; an acquire that checks the directory's data found
//! the lock's there at some moment of its life. At every failure: `Lost`
//! only when the node is gone, `SessionEnded` only after expiry,
//! `Exhausted` only for a sequence at the limit, negative or shared,
//! `DirectoryHoldsData` only if the directory held other data during the
//! acquire, `NoDirectory` only after as many removals of the directory,
//! `GiveUp` only after the deadline or for a `try_*` acquire; never
//! `InvalidName`, nor `Request` (but for a create that finds its name
//! taken at the counter's limit); `WriterLost` only when the downgrading
//! writer's node was deleted by someone else (or by a downgrade of its
//! session whose answer was lost, and the reader node it made since: a
//! writer whose keeper cannot read its node does not learn it before it
//! downgrades again). A downgrade's reader is granted only once the
//! writer's node was deleted by its transaction.
//!
//! At every failure, what the library would report too
//! (`Failure::reported`, whose variants the driver makes its errors one to
//! one), made from what the carrier knows as the driver knows it: the
//! error of the request the last exchange blamed (`Carried::blamed`), or
//! of the look that ended the wait's poll, since the machine's last
//! request, told apart as the library's carrier does (`request_error`:
//! no answer, `Error::Unanswered`, or any other; a transaction's the
//! failing operation's); the session's end `Arrivals::ended` recorded; the
//! model session's state. It must say what the model did: `SessionExpired`
//! only in an expired session, for a node gone or the session's end;
//! never `SessionClosed` or `AuthFailed` (the model's sessions only
//! expire); `Lost` only in a live session, naming the node gone, which the
//! model deleted (the acquire's own, or, for `WriterLost`, the
//! downgrade's writer node); `ListingTooLarge` with the count, size and
//! limit of the listing refused (the directory at the message that failed
//! the acquire); `PermitsDisagree` naming a contender before the
//! acquire's node that carries the count named, another than the one asked
//! (also named); `NoAnswer` only with `Error::Unanswered` after answers to
//! the acquire's requests were lost since its last; `RequestFailed` only
//! for a create whose name is taken (`NodeExists`); never `Unexplained`
//! nor `InvalidName`; and the failure's own variant for the others
//! (`SequenceExhausted`, `DirectoryHoldsData`, `NoDirectory`). (The driver
//! reads the session's state once the withdrawal it waits for is over;
//! here the report is made as the failure comes, one moment of that
//! while.)
//!
//! At every change of a machine's place in the queue (`Contender::place`):
//! its `node` is the machine's node; `ahead` is `ordering::ahead` of that
//! node over the listing the machine last decided on, which contains it;
//! `waits_on` is `None` exactly when the machine answers `Grant` (and every
//! grant but a downgrade's reader's changes the place), and otherwise names
//! a node of that listing that precedes it (`ordering::ahead` over that
//! node alone is 1).
//!
//! At every holder's transaction, as the server commits it (at its zxid):
//! the holder node it checks exists; unless a stranger's node took that
//! name (the limit `core::transaction` documents: counted, not a failure),
//! that node is the committing session's, the directory's state grants it
//! (`ordering::decide`), the contender was told of its grant and holds it
//! (or has begun its release, sent after the transaction), and no other
//! contender holds a conflicting lock (a writer with anyone, a reader with
//! a writer). At every answer read: a commit answers with one result of
//! each operation's kind (`answered_by`) and the server committed it; a
//! refusal names the holder node (`Lost` or `HolderRefused`) and the server
//! refused it. At the end of the drain: every data node was last written
//! by the last checked commit of its contender.
//!
//! At every downgrade's transaction, as it is applied: the node right after
//! the writer node (but the downgrade's own) is not a writer (the rule the
//! transaction's `check` of the reader after the writer keeps: a writer
//! right behind may take the writer node's deletion for its grant).
//!
//! The checks learn what a transaction is from its operations: one that
//! writes the release record to the directory and deletes a node is a
//! release with the record (the node deleted `By::Session { record: true }`);
//! one that creates a contender node (a reader with a writer's sequence)
//! and deletes that writer is a downgrade (`By::Downgrade`).
//!
//! At the end of each release or withdrawal: `Deleted` leaves no node of
//! the session carrying the acquire's token; a release with the mark
//! deleted with the record, unless the directory's ACL refuses it; `Lost`
//! only when someone else deleted the node; `SessionEnded` only after
//! expiry; never `Failed`; a revocation the machine saw was written to a
//! node of its name. At every recycle: the directory gets the ACL read
//! from the directory it replaces (and the transaction fails while the
//! directory has children).
//!
//! After the random part of a schedule, faults, deadlines and new acquires
//! stop, the stranger deletes the nodes it made and disconnected sessions
//! reconnect. Everything first comes to rest with the holders holding on
//! (`World::check_at_rest`): then no wake-up is owed: every acquire under
//! way waits, and one whose node is live waits on exactly the nodes the
//! directory now says it waits on (`ordering::decide`'s node; a
//! semaphore's N immediate predecessors, and it is not owed a permit),
//! with each watch kept by the client and set on the server (but a watched
//! node set `blind` that this session may not read, and not read since:
//! the server keeps no watch of it, and the wait's listing's child watch
//! must then be set on the server, kept by the client and its carrier's
//! handle not fired: the node's deletion fires it). Then holders
//! release: within a bounded number of steps everything must come to rest
//! with every acquire finished (every waiter granted, none left without
//! something to wake it), no node of a live session left in the
//! directory, and no watch of a live session on a node that does not
//! exist (a release marker, a semaphore's watched node found gone), nor a
//! child watch on a directory that does not exist, left on the server,
//! nor kept by a client for a wait (on its own node or a marker; a
//! semaphore's on a watched node, or a listing's child watch, that it did
//! not leave to fire). A listing's child watch left to fire may stay (the
//! directory's next child change fires it), but a client keeps one only
//! while the server holds it for the session: none is kept for ever.
//!
//! No request herd behind a listing's child watch, which fires at every
//! session that listed the directory since its last change: a wait reads
//! its watched node (`ReadWatched`) only after a `SetWatches` that set
//! its watch unread (`blind`, two data paths), at most once per such
//! `SetWatches`, and only the node it watches.
//!
//! A semaphore's, instead of the lock's exclusion, after every step: never
//! more than N holders (holders as above: told of their grant, not lost,
//! their node live); no herd (`World::check_herd`): a contender whose node
//! is live keeps watches for its wait on at most N other live nodes, each
//! one of the N contenders right before its node (so a deletion wakes at
//! most N waits), and each deletion of a node counts the contenders the
//! server notifies whose client keeps that watch for the wait of a live
//! node: at most N. (Lingering watches, of waits that are over, are not
//! counted: their clients ignore the event, and the server may notify
//! more than N sessions of a deletion; `Stats::over_n_notified` counts
//! those deletions.) At every grant, the directory at the message that led to it gives a
//! permit, by the rule written again here (`permit_holds`: fewer than N
//! valid contender nodes before it, none carrying another count, its
//! sequence valid and its own), never with the mark; a holder's
//! transaction commits only while the directory gives it a permit and
//! fewer than N others hold; `PermitsDisagree` only when a contender
//! before the acquire's node carried another count, the one its machine
//! names (`Contender::conflict`).
//!
//! # Mutations
//!
//! To show that these checks find broken rules, `Machine` can wrap the real
//! machine with one rule broken on purpose: around the machine (what an
//! answer tells it, never what the carrier does with the watches the
//! answer left, which the wire decides from the server's bytes; answers
//! it takes without asking; the events it is fed; the actions it gives),
//! or, for (w), the wire's bytes as the carrier sends them. Each
//! `mutation_*` test runs the same schedules (a fixed seed) and passes
//! when a check fails within `MUTATION_BUDGET` (300) cases, `RARE_BUDGET`
//! (5,000) for the six that need a rarer interleaving. The case that
//! first failed a check (with the listings' child watches modelled; the
//! schedules changed with them, and so did these numbers):
//!
//! - (a) a data change on the watched node counts as its deletion: 4
//! - (b) `CheckOwn` answered "exists" without asking: 19
//! - (b') `Event::Interrupted` never reaches the machine: 281 (about one
//!   schedule in 330 loses a connection whose reconnection delivers the
//!   waiter's own node's deletion after the watched node's)
//! - (c) any release record names the watched node: 2
//! - (d) a writer is granted at its first wait: 1
//! - (e) my own node's deletion never reaches the wait: 19
//! - (f) find-own takes a node of another session carrying my token: 6
//! - (g) a release due with the record deletes without it: 1
//! - (h) the directory recycled without its ACL read (the default ACL, at
//!   any version): 6
//! - (i) a refused release record ends the release, the node left: 9
//! - (j) the held node's deletion never reaches the machine: 15
//! - (k) the watched node's deletion counts as its marker's creation: 2
//! - (l) the marker's watch is kept after the wait on its node: 2
//! - (m) a downgrade's reader is blind to the writers queued behind the
//!   writer node (it replaces the node with a writer right behind it): 13
//! - (n) an observer names the head writer without its announcement: 1
//! - (o) a release marker that exists when watched counts as set, and (p)
//!   a release record read grants with my own node gone: never (below)
//! - (q) my own node's `NoAuth` counts as its watch set (a hand-off then
//!   grants with no `exists`, my node gone): 19
//! - (r) a downgrade's transaction does not check the reader after the
//!   writer node (seen only when that reader leaves between the listing
//!   and the transaction, a writer behind it; the scheduler favours that
//!   race for this mutation, `World::race`: about one schedule in 430):
//!   58
//! - (s) a semaphore's waiter watches its immediate predecessor only (its
//!   `SetWatches` loses `also`), on a semaphore's schedules: 2 (at rest it
//!   waits on one node where the directory says N; without that check,
//!   at rest it is owed a permit)
//! - (t) a semaphore's waiter watches the N contenders nearest the head,
//!   on a semaphore's schedules: 2 (the herd: it watches a node that is
//!   not one of the N right before it)
//! - (u) my own node's and the marker's watches go in one `SetWatches`
//!   (`together`) also while my node is not known readable: 19 (a holder
//!   whose node's ACL denies it READ took over a watch the server keeps
//!   silent; or a hand-off grants with my node gone)
//! - (v) they go together also after a write to my node was seen: 607
//!   (the request fires again at once for that write: told twice; the
//!   wait then has no watch on its node, and every hand-off lists again;
//!   about one schedule in 250, so `RARE_BUDGET` since the listings' child
//!   watches moved the schedules: 228 before)
//! - (w) the wire's `SetWatches` is relative to my czxid + 1000 (a broken
//!   wire's bytes, `World::send_request`): 3,696 (a revocation request
//!   written between my create and the request is missed, and the guard,
//!   taking over that watch, never learns it; about one schedule in 2,000:
//!   358 before the child watches moved the schedules, hence
//!   `RARE_BUDGET` 5,000)
//! - (x) the event of the listing's child watch never reaches the wait
//!   (`Event::Listing` dropped: it waits on, as the core's `woke` would
//!   if it took that event for nothing): 600, with `RARE_BUDGET` (only a
//!   writer right behind the node whose deletion alone grants it sets its
//!   watch `blind`; 52 while every taught wait did) (a wait whose watched node,
//!   set `blind`, denies it READ, is never told of its deletion: stuck at
//!   the drain, or at rest owed the lock). Its one-line form in the core,
//!   applied to a copy of it (`if self.blind && false` in `woke`'s
//!   `Event::Listing(_)` arm: the wait waits on, no `ReadWatched`), fails
//!   `schedules_keep_every_rule` within its first cases (at rest, a
//!   waiter whose watched node is gone: "a missed wake-up"), and the
//!   scenarios
//!   `scenario_a_watched_node_it_may_not_read_set_unread_is_read_when_the_directory_changes`
//!   and `scenario_a_strangers_node_before_the_deletion_reads_the_watched_node_once`.
//!
//! One-line mutations of the semaphore's rules in the core, applied by
//! hand to a copy of it, each failed
//! `semaphore_schedules_hold_n_permits_with_no_missed_wakeup_and_no_herd`
//! with every `PROPTEST_RNG_SEED` tried (1 to 3, 1,000 schedules each),
//! the check that failed first in brackets:
//!
//! - `ahead <= n` for `ahead < n` in `semaphore::decide`: a grant with N
//!   before it (the grant's check, `permit_holds`; with it off, more than
//!   N hold);
//! - `also: Vec::new()` in `Acquire::decide_permit` (the immediate
//!   predecessor watched alone): at rest a wait on the wrong nodes; with
//!   that check off, at rest a waiter owed a permit (a missed wake-up);
//! - the N nodes nearest the head watched (`predecessors[..n]` for the N
//!   nearest in `semaphore::decide`): the herd (`World::check_herd`);
//! - a data change on one of several watched nodes watches the watched
//!   node again (`Rewatch`) instead of listing; the machine's kept watches
//!   not cleared at a data change (`live`); the other watched nodes' data
//!   watches sent without a watch: at rest a watch not set on the server;
//! - the other watched nodes' answers ignored by `several` (a node found
//!   gone taken for a watch set): at rest a waiter owed a permit.
//!
//! (q) and (r) are the wrapped forms of two one-line mutations of
//! `core/src/acquire.rs`, also checked by hand: applied to a copy of the
//! core, `schedules_keep_every_rule` failed a check with every
//! `PROPTEST_RNG_SEED` tried (1 to 3, 3,000 and 5,000 schedules): (q) a
//! holder whose node is gone with nothing to tell its keeper (it takes
//! over a watch never set), (r) the downgrade's rule, without `World::race`:
//!
//! ```text
//! -            Some(Reply::Ok(())) if self.own_watch == OwnWatch::None => self.own_watch = OwnWatch::Set,
//! +            Some(Reply::Ok(()) | Reply::NoAuth) if self.own_watch == OwnWatch::None => self.own_watch = OwnWatch::Set,
//!
//! -                    let successor = (successor != self.me).then(|| successor.to_owned());
//! +                    let successor: Option<String> = None;
//! ```
//!
//! So are (u), (v) and (w), of `acquire.rs` and `wire.rs`, applied in
//! place and undone: of 5,000 schedules (each seed tried), (u) failed 8
//! and 8 (seeds 0 and 1: a grant with my node gone, a holder whose node is
//! gone with nothing to tell it), (v) 17 and 22 (seeds 0 and 1: told twice
//! of a write), (w) 2, 4, 2 and 1 (seeds 0 to 3: a revocation request
//! nothing will tell), the real core none; the scenarios
//! `scenario_a_node_not_known_readable_is_watched_with_get_data`,
//! `scenario_a_write_seen_is_read_with_get_data` and
//! `scenario_a_batched_set_watches_fires_what_changed_since_the_create`
//! catch each every time:
//!
//! ```text
//! -        let together = own && marker.is_some() && self.own_readable && !self.own_written;
//! +        let together = own && marker.is_some() && !self.own_written;            (u)
//! +        let together = own && marker.is_some() && self.own_readable;            (v)
//!
//! -                    let relative = machine.czxid().filter(|_| *together && *own);
//! +                    let relative = machine.czxid().map(|z| z + 1000).filter(|_| *together && *own);   (w)
//! ```
//!
//! (v) and (w) break no exclusion: (v) costs an event and a listing (the
//! wait keeps no watch on its node and lists at every hand-off), (w) a
//! revocation request unseen; they are caught by the checks of what the
//! library promises besides (no wake-up twice for one write, a revocation
//! request known to the guard), which the schedules found no other rule
//! of the real machine to break.
//!
//! Two more, (o) and (p), pass here, and must (applied to a copy of the
//! core, 4 seeds of 5,000 schedules each passed; wrapped,
//! `mutations_no_faithful_model_tells_apart`, ignored, shows it): no
//! faithful model of the server, the client and the carrier tells them
//! from the real machine; the unit tests in `acquire/tests.rs` pin them.
//!
//! ```text
//! -            (MarkerWatch::Asked, Some(Reply::Ok(false))) => MarkerWatch::Set,
//! +            (MarkerWatch::Asked, Some(Reply::Ok(_))) => MarkerWatch::Set,
//!
//! -                    own: Reply::Ok(()) | Reply::NoAuth,
//! +                    own: _,
//! ```
//!
//! (o) counts a release marker that existed when watched (a stranger's
//! node: a release's marker lives only inside its transaction, so no
//! holder leaves one behind). Only an `Event::Released` after that answer
//! could show it, and none comes: `exists` on a node that exists sets a
//! data watch, whose events are `NodeDeleted` and `NodeDataChanged`, never
//! `NodeCreated`, and the wire does not keep that watch (the client removes
//! it at once). (A `SetWatches` that finds a marker there does fire
//! `NodeCreated`, at once, before its answer, which says so: that marker
//! counts as found there, see "What it found".) (p) grants on a release record read while my node is gone.
//! A hand-off without my node's watch set, or after `Event::Interrupted`,
//! checks with `exists` anyway; with the watch set, its `NodeDeleted`
//! comes before the multi-read's answer (a session's events and answers
//! come in order), and the machine has failed with `Lost` before it sees
//! the record.
//!
//! One-line mutations of `Failure::reported` (`contender/ending.rs`),
//! applied in place and undone, each checked on the lock's and the
//! semaphore's schedules from a fixed seed (the first case that failed a
//! check, of 5,000; the real core fails none), the report's check failing:
//!
//! ```text
//! -            Failure::Lost => gone(machine.node()),
//! +            Failure::Lost => gone(None),                                    1 and 3
//! -        let gone = |node| session_over(now).unwrap_or(Reported::Lost { node });
//! +        let gone = |node| Reported::Lost { node };                          24 and 41
//! -                Some(RequestError::Answered(e)) => Reported::RequestFailed(e),
//! +                Some(RequestError::Answered(e)) => Reported::NoAnswer(e),   2439 and 79
//! -                let (contenders, size, limit) = ... (r.children, r.size, r.limit));
//! +                let (contenders, size, limit) = ... (r.children, r.limit, r.size));   1 and 1
//! -            Failure::WriterLost => gone(machine.replaces()),
//! +            Failure::WriterLost => gone(machine.node()),                    61 (lock's only: no downgrade)
//! ```
//!
//! Two pass, and must here: the model retries a lost answer until it
//! comes (its time is its steps), so no request fails for good unanswered
//! and `Some(RequestError::Unanswered(e)) => Reported::RequestFailed(e)`
//! is never reached (`NoAnswer` is the unit tests' and
//! `tests/limits/server_limits.rs`'s, against a server that never
//! answers); and a session's end reaches `Arrivals` before any request is
//! answered `SessionEnded` (a session's events and answers come in order),
//! so the fallback of `Failure::SessionEnded` to a node gone when no event
//! told the end (made `Reported::Lost` there) is never taken.
//!
//! Scenario tests replay the tricky interleavings by hand, each also
//! against the mutation it is there to catch.
//!
//! # What it found
//!
//! - With the listings' child watches modelled, a schedule (seed 1) where
//!   an acquire's listing's answer came after that acquire had ended (its
//!   create refused), so the client dropped its watch and asked the server
//!   to remove it, while the next acquire's listing, which sets the same
//!   child watch (one per session and path), was already in flight: the
//!   server applied the listing, then the removal, and the client then
//!   kept the new listing's watch with none on the server (never to fire:
//!   "listings' watches kept by clients that the server does not hold").
//!   A fault of the model's client, not of the core: the library's client
//!   defers such a removal until the watching requests in flight on that
//!   path are answered, and cancels it if one set its watch; the model now
//!   does the same (`World::send_unwatch`). Had the client not, a wait
//!   whose watched node was set `blind` and denies it READ would have hung
//!   on that silent child watch.
//! - Two schedules where setting my node's and the marker's watches in one
//!   `SetWatches` (`together`) granted wrongly in its first version, each
//!   replayed by a scenario (both fixed: a read teaches only if its czxid
//!   is my node's, `Contender::own_node_read`; the answer says which
//!   watches fired before it, `Reply::WatchesSet`, and a marker's that
//!   did is a stranger's):
//!   `scenario_a_strangers_node_under_my_name_proves_nothing_of_my_acl`
//!   (a handle learns that it may read its nodes from a `getData` that
//!   read a stranger's node made again under my node's name: its later
//!   waits set a silent watch on their own unreadable node, and a hand-off
//!   grants with it gone; learning needs the read's czxid to be my node's)
//!   and `scenario_a_strangers_marker_found_by_a_batched_set_watches_is_no_release`
//!   (a stranger's marker made between my listing and my `SetWatches`
//!   fires `NodeCreated` at once, which the wire keeps and the machine
//!   takes for the release; the watched writer then gives up and I am
//!   granted while the holder before it holds: a marker a `SetWatches`
//!   finds there is never a release's, which lives only inside its
//!   transaction, and must count as `exists` finding it does).
//! - The model left strangers' markers out of listings (harmless while a
//!   marker found by `exists` was dropped anyway): they are listed now, and
//!   keep the directory from being empty.
//! - `Acquire` once forgot that my own node's watch had fired when the
//!   event came between the answers of a `SetWatches { own: true, .. }`
//!   (the answer's `Ok` set the one-shot watch back to "set"), so a later
//!   deletion of my node sent nothing and a hand-off granted with my node
//!   gone. `own_watch_fired_while_setting_watches` replays it.
//! - `Contender` failed an acquire with a request error when the directory
//!   was gone at the read of its data (a stranger deleted its node, then the
//!   server removed the empty container): its node is gone, so it is
//!   `Lost`. `the_directory_gone_before_its_data_is_read` replays it.
//! - The carrier fed a watched node's event that came while an exchange
//!   was under way to `Contender::event`, which (rightly: `Arrived` takes
//!   none while a request is in flight) drops it, where the library's
//!   driver leaves it in its watch future until the wait. No lock's wait
//!   saw it (its watched node's request is the last of its `SetWatches`),
//!   but a semaphore's `SetWatches` sends the other watched nodes' after
//!   it: the data change came between, and the wait then waited with that
//!   node's watch gone (a missed wake-up, at rest). The carrier now keeps
//!   such events for the wait;
//!   `scenario_a_data_change_before_a_permits_watches_are_all_set_is_kept_for_the_wait`
//!   replays it.
//! - A semaphore's watches linger once the wait is over (they are not
//!   removed): a node that holds a permit for long is watched by every
//!   session that waited on it meanwhile and moved on (granted, released,
//!   queued again behind), so its deletion notifies more than N sessions
//!   (`Stats::over_n_notified`: some 250 deletions in 6,000 schedules;
//!   `scenario_a_long_held_permit_is_watched_by_every_wait_on_it` replays
//!   it); only N of them still wait on it (the others' clients ignore the
//!   event), so at most N list again.
//! - Recycling deletes the directory at the version read with its ACL, so
//!   if the server removes the empty container between that read and the
//!   recycle, and another contender makes it again (with the lock's ACL, at
//!   the same version), the recycle replaces that new directory, with the
//!   ACL read from the one before (rare). `recycling_a_directory_made_again_meanwhile`
//!   replays it; the check is that the ACL given is the one read.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::num::NonZeroU32;
use std::sync::Mutex;
use std::time::Duration;

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{FileFailurePersistence, RngAlgorithm, TestError, TestRng, TestRunner};
use uuid::Uuid;
use zk_rwlock_core::acquire::{self, Event, NodeEvent, WatchedKind};
use zk_rwlock_core::backoff::Backoff;
use zk_rwlock_core::contender::{
    self, child_path, node_data, Action, Failure, Input, Outcome as Ended, Replacement, Reported,
    RequestError, MAX_DIRECTORY_ATTEMPTS,
};
use zk_rwlock_core::election::{announcement, announces};
use zk_rwlock_core::lease::SessionState;
use zk_rwlock_core::node_name::{
    is_lock_directory_data, is_revocation, release_marker, release_record, RELEASE_MARKER_SUFFIX,
    REVOKE_PAYLOAD,
};
use zk_rwlock_core::ordering::{self, decide, is_valid_seq, leader, Decision, RECYCLE_THRESHOLD};
use zk_rwlock_core::semaphore::{self, permits_of};
use zk_rwlock_core::transaction::{self, Guarded, Refusal};
use zk_rwlock_core::wire::{
    self, Carry, CreateMode, Done, Error, Exchange, Fault, Reply, Request, Stat, Watch, Wire,
};
use zk_rwlock_core::{Layout, Mode, NodeName};

type Check = Result<(), String>;

/// Adds a line to the world's trace, if it keeps one (a failing schedule is
/// run again with the trace on: runs are deterministic).
macro_rules! note {
    ($world:expr, $($arg:tt)*) => {
        if $world.tracing {
            let line = format!($($arg)*);
            $world.trace.push(format!("{:4} {line}", $world.step));
        }
    };
}

// ---- randomness ------------------------------------------------------------

// splitmix64: sub-choices within a step, and the final drain's schedule.
use zk_rwlock_testkit::SplitMix64 as Rng;

// ---- the machine, and broken copies of it ------------------------------------

/// A rule broken on purpose (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mutation {
    None,
    /// (a) A data change on the watched node counts as its deletion.
    DataChangeGrants,
    /// (b) `CheckOwn` is answered "my node exists" without asking.
    SkipOwnCheck,
    /// (b') `Event::Interrupted` never reaches the machine.
    IgnoreInterrupted,
    /// (c) Any release record is taken to name the watched node.
    AnyRecord,
    /// (d) A writer is granted at its first wait.
    WriterGrantedAtWait,
    /// (e) My own node's deletion never reaches the wait.
    IgnoreOwnDeletion,
    /// (f) Find-own ignores the owner: a node of another session carrying
    /// my token counts as mine.
    FindOwnAnySession,
    /// (g) A release due with the release record deletes without it.
    ReleaseWithoutRecord,
    /// (h) The directory is recycled without its ACL being read.
    RecycleUnread,
    /// (i) A refused release record ends the release: the node is left.
    RefusedRecordOrphan,
    /// (j) The held node's deletion never reaches the machine.
    IgnoreHeldDeletion,
    /// (k) The watched node's deletion counts as its release marker's
    /// creation: any deletion of a native writer grants.
    DeletionMarks,
    /// (l) The marker's watch is kept after the wait on its node ends.
    KeepMarkerWatch,
    /// (m) A downgrade's reader does not see the writers queued behind
    /// the writer node: it replaces the writer node with a writer right
    /// behind it.
    DowngradeBehindWriter,
    /// (n) An observer names the head writer without its announcement.
    ObserverNamesHead,
    /// (o) A release marker that exists when watched (a stranger's) counts
    /// as set: its creation would be taken for the release.
    MarkerExisting,
    /// (p) A release record read grants even when my own node is gone.
    RecordWithoutOwn,
    /// (q) My own node's `NoAuth` (its ACL denies me READ) counts as its
    /// watch set: hand-offs trust a watch that is not there.
    OwnUnreadableWatched,
    /// (r) A downgrade's transaction does not check the reader queued
    /// right after the writer node.
    DowngradeUnchecked,
    /// (s) A semaphore's waiter watches its immediate predecessor only
    /// (its `SetWatches` loses `also`).
    PermitWatchesOne,
    /// (t) A semaphore's waiter watches the N contenders nearest the head
    /// instead of its N immediate predecessors.
    PermitWatchesHead,
    /// (u) My own node's and the marker's watches go in one `SetWatches`
    /// (`together`) also when my node is not known readable.
    TogetherUnreadable,
    /// (v) They go together also after a write to my node was seen.
    TogetherWritten,
    /// (w) The wire's `SetWatches` is relative to a zxid after my node's
    /// czxid (+1000): the writes to my node since its create are missed.
    LaterRelative,
    /// (x) The listing's child watch's event (`Event::Listing`) never
    /// reaches the wait: it waits on, as if nothing came.
    IgnoreListing,
}

/// The real machine, or the real machine with one rule broken. Every
/// answer reaches it through `core::wire` ([`Machine::settle`]); a broken
/// rule is applied around it: to what an answer tells the machine (never
/// to what the carrier does with the watches the request left, which the
/// wire decides from the server's answer), to answers it takes without
/// asking ([`Machine::unasked`]), to the events it is fed, or to the
/// actions it gives.
struct Machine {
    inner: contender::Contender,
    mutation: Mutation,
    mode: Mode,
    session: i64,
    /// The last deletion the real machine asked for carries the record.
    record: bool,
    /// The last action it gave: what the answers of the exchange under way
    /// are for.
    action: Option<Action>,
    /// The answers of the exchange under way as the broken machine reads
    /// them, where they differ from the server's: by index.
    misread: Vec<(usize, Result<Reply, Error>)>,
    /// The release record's transaction was refused (for
    /// `RefusedRecordOrphan`).
    refused: bool,
    /// The children of the last listing answered (for `PermitWatchesHead`).
    listing: Vec<String>,
    /// A write to my node was seen (an event of my node's watch that is
    /// no deletion: for `TogetherUnreadable`).
    own_written: bool,
}

/// The run steps the machine as this one (its events dropped, its
/// answers misread, its actions broken as the mutation says).
impl wire::Stepping for Machine {
    fn contender(&mut self) -> &mut contender::Contender {
        &mut self.inner
    }

    fn event(&mut self, event: Event) {
        Machine::event(self, event);
    }

    fn settle(&mut self, wire: &mut Wire, exchange: &Exchange) -> Action {
        Machine::settle(self, wire, exchange)
    }
}

impl Machine {
    fn new(inner: contender::Contender, mode: Mode, session: i64, mutation: Mutation) -> Machine {
        Machine {
            inner,
            mutation,
            mode,
            session,
            record: false,
            action: None,
            misread: Vec::new(),
            refused: false,
            listing: Vec::new(),
            own_written: false,
        }
    }

    fn start(&mut self) -> Action {
        let action = self.inner.start();
        self.mutate(action)
    }

    fn release(&mut self) -> Action {
        let action = self.inner.release();
        self.mutate(action)
    }

    fn withdraw(&mut self) -> Action {
        let action = self.inner.withdraw();
        self.mutate(action)
    }

    /// An event that arrived while a request was in flight.
    fn event(&mut self, event: Event) {
        if !self.drops(event) {
            self.saw(event);
            self.inner.event(event);
        }
    }

    /// Notes a write to my node seen (as the machine notes it).
    fn saw(&mut self, event: Event) {
        if let Event::Own(what) = event {
            self.own_written |= !matches!(what, NodeEvent::Deleted | NodeEvent::SessionEnded);
        }
    }

    /// An event that ends the wait's `Wait`.
    fn step_event(&mut self, event: Event) -> Action {
        if self.drops(event) {
            return Action::Acquire(acquire::Action::Wait { poll: false });
        }
        self.saw(event);
        let event = match event {
            Event::Watched(NodeEvent::Deleted) if self.mutation == Mutation::DeletionMarks => {
                self.inner.event(Event::Released);
                event
            }
            Event::Watched(NodeEvent::DataChanged) if self.mutation == Mutation::DataChangeGrants => {
                Event::Watched(NodeEvent::Deleted)
            }
            event => event,
        };
        let action = self.inner.step(Input::Acquire(acquire::Input::Event(event)));
        self.mutate(action)
    }

    /// Notes the answer to request `index` of the exchange under way, as
    /// the server gave it; a broken machine may read it otherwise.
    fn read(&mut self, index: usize, request: &Request, answer: &Result<Reply, Error>) {
        let misread = match (self.mutation, self.action.as_ref(), request, answer) {
            (
                Mutation::AnyRecord,
                Some(Action::Acquire(acquire::Action::ReadRecord { watched })),
                Request::ReadAll { .. },
                Ok(Reply::Reads(reads)),
            ) => match reads.as_slice() {
                [Ok(_), mine] => Some(Ok(Reply::Reads(vec![
                    Ok(release_record(watched).to_vec()),
                    mine.clone(),
                ]))),
                _ => None,
            },
            (
                Mutation::MarkerExisting,
                Some(Action::Acquire(acquire::Action::SetWatches {
                    marker: Some(marker), ..
                })),
                Request::Exists { path, watch: true },
                Ok(Reply::Stat(Some(_))),
            ) if child_of(path) == Some(marker.as_str()) => Some(Ok(Reply::Stat(None))),
            (
                Mutation::RecordWithoutOwn,
                Some(Action::Acquire(acquire::Action::ReadRecord { .. })),
                Request::ReadAll { .. },
                Ok(Reply::Reads(reads)),
            ) => match reads.as_slice() {
                [Ok(record), Err(Error::NoNode)] => {
                    Some(Ok(Reply::Reads(vec![Ok(record.clone()), Ok(Vec::new())])))
                }
                _ => None,
            },
            (
                Mutation::OwnUnreadableWatched,
                Some(Action::Acquire(acquire::Action::SetWatches { own: true, .. })),
                Request::GetData { watch: true, .. },
                Err(Error::NoAuth),
            ) if index == 0 => Some(Ok(Reply::Data {
                data: Vec::new(),
                stat: Stat {
                    czxid: self.inner.czxid().unwrap_or_default(),
                    ephemeral_owner: self.session,
                },
            })),
            (
                Mutation::FindOwnAnySession,
                Some(Action::Stat { .. }),
                Request::Exists { .. },
                Ok(Reply::Stat(Some(stat))),
            ) => Some(Ok(Reply::Stat(Some(Stat {
                ephemeral_owner: self.session,
                ..*stat
            })))),
            (
                Mutation::DowngradeBehindWriter,
                Some(Action::Create | Action::Acquire(acquire::Action::List)),
                Request::List { .. },
                Ok(Reply::Children {
                    children,
                    data_length,
                }),
            ) => self.inner.replaces().map(|writer| {
                // Blind to every writer but the one it replaces.
                let children = children
                    .iter()
                    .filter(|c| {
                        *c == writer || c.parse::<NodeName>().map_or(true, |n| n.mode() == Mode::Read)
                    })
                    .cloned()
                    .collect();
                Ok(Reply::Children {
                    children,
                    data_length: *data_length,
                })
            }),
            _ => None,
        };
        if let Some(misread) = misread {
            self.misread.push((index, misread));
        }
        if let (Request::List { .. }, Ok(Reply::Children { children, .. })) = (request, answer) {
            self.listing = children.clone();
        }
        if let (Some(Action::Delete { record: true, .. }), Err(e)) = (&self.action, answer) {
            self.refused = matches!(
                e.answer::<()>(),
                contender::Answer::NoAuth
                    | contender::Answer::Failed
                    | contender::Answer::Exists
                    | contender::Answer::Unimplemented
            );
        }
    }

    /// The answers a broken machine takes for the exchange of its last
    /// action without sending it.
    fn unasked(&self) -> Option<Vec<Result<Reply, Error>>> {
        match (self.mutation, self.action.as_ref()?) {
            (Mutation::SkipOwnCheck, Action::Acquire(acquire::Action::CheckOwn)) => {
                Some(vec![Ok(Reply::Stat(Some(Stat {
                    czxid: self.inner.czxid().unwrap_or_default(),
                    ephemeral_owner: self.session,
                })))])
            }
            // Empty, its ACL read, at any version (-1, as ZooKeeper takes it).
            (Mutation::RecycleUnread, Action::ReadDirAcl) => Some(vec![Ok(Reply::Acl {
                version: -1,
                children: 0,
            })]),
            _ => None,
        }
    }

    /// Settles the exchange of the last action through the wire: the
    /// machine's next action.
    fn settle(&mut self, wire: &mut Wire, exchange: &Exchange) -> Action {
        if self.mutation == Mutation::RefusedRecordOrphan && self.record && self.refused {
            return Action::Done(Ended::Deleted);
        }
        let action = if self.misread.is_empty() {
            wire.settle(exchange, &mut self.inner)
        } else {
            let mut misread = exchange.clone();
            for (index, answer) in std::mem::take(&mut self.misread) {
                misread.answer(index, answer);
            }
            wire.settle(&misread, &mut self.inner)
        };
        self.mutate(action)
    }

    /// The deadline passed during `exchange` (or in the wait's `Wait`).
    fn deadline(&mut self, exchange: Option<&Exchange>) -> Action {
        let action = wire::deadline(exchange, &mut self.inner);
        self.mutate(action)
    }

    /// The held node's watch fired: the keeper feeds it to the machine
    /// (`wire::Keeping::fired`), but for the mutation that ignores the
    /// node's deletion (the keeper waits on, as if nothing came).
    fn held_fired(
        &mut self,
        keeping: &mut wire::Keeping<String>,
        kind: WatchedKind,
        state: SessionState,
    ) -> Option<wire::Report> {
        if self.mutation == Mutation::IgnoreHeldDeletion && NodeEvent::of(kind, state) == NodeEvent::Deleted {
            return None;
        }
        Some(keeping.fired(&mut self.inner, kind, state))
    }

    fn drops(&self, event: Event) -> bool {
        match self.mutation {
            Mutation::IgnoreInterrupted => event == Event::Interrupted,
            Mutation::IgnoreOwnDeletion => event == Event::Own(NodeEvent::Deleted),
            Mutation::IgnoreListing => matches!(event, Event::Listing(_)),
            _ => false,
        }
    }

    fn mutate(&mut self, mut action: Action) -> Action {
        if let Action::Delete { record, .. } = &action {
            self.record = *record;
        }
        if let Action::Acquire(acquire::Action::SetWatches {
            watched,
            also,
            own,
            marker,
            together,
            ..
        }) = &mut action
        {
            match self.mutation {
                // The wire's check of what the contender knows, skipped:
                // it is told it reads its node.
                Mutation::TogetherUnreadable if *together => {
                    self.inner = self.inner.clone().with_own_readable(true);
                }
                Mutation::TogetherWritten => *together = *own && marker.is_some(),
                Mutation::PermitWatchesOne => also.clear(),
                Mutation::PermitWatchesHead if !also.is_empty() => {
                    // The N valid predecessors nearest the head, the
                    // nearest of them in `watched`.
                    let me = self.inner.node().unwrap_or_default();
                    let mut heads = predecessors(me, &self.listing);
                    heads.truncate(also.len() + 1);
                    if let Some((_, nearest)) = heads.pop() {
                        *watched = nearest;
                        *also = heads.into_iter().map(|(_, name)| name).collect();
                    }
                }
                _ => {}
            }
        }
        let action = match (self.mutation, action) {
            (Mutation::WriterGrantedAtWait, Action::Acquire(acquire::Action::SetWatches { .. }))
                if self.mode == Mode::Write =>
            {
                Action::Grant { mark: true }
            }
            (Mutation::ReleaseWithoutRecord, Action::Delete { name, record: true }) => {
                Action::Delete { name, record: false }
            }
            (
                Mutation::DowngradeUnchecked,
                Action::Replace {
                    writer,
                    reader,
                    successor: Some(_),
                    mine,
                    record,
                    writer_version,
                },
            ) => Action::Replace {
                writer,
                reader,
                successor: None,
                mine,
                record,
                writer_version,
            },
            (_, action) => action,
        };
        self.action = Some(action.clone());
        self.misread.clear();
        self.refused = false;
        action
    }
}

// ---- the ZooKeeper model ---------------------------------------------------

/// The lock directory's path.
const DIR: &str = "/locks/sim";
/// Its parent: the one node `MakePath` makes.
const PARENT: &str = "/locks";
/// The name the model gives a child watch on the lock directory (a
/// listing's), in the client's registry, the carrier's handles and the
/// events: no child's name.
const CHILDREN: &str = "(children)";

/// The ACL a lock gives the directory it makes (`CreateDir`).
const DIR_ACL: u32 = 7;
/// The ACL an operator gave a directory made beforehand.
const OPERATOR_ACL: u32 = 9;
/// The server's default, open to all: what a node made with no ACL read gets.
const DEFAULT_ACL: u32 = 0;

/// The data node outside the lock directory that contender `c`'s
/// transactions write.
fn data_path(c: usize) -> String {
    format!("/data/c{c}")
}

/// True for a release marker's name.
fn is_marker(name: &str) -> bool {
    name.ends_with(RELEASE_MARKER_SUFFIX)
}

/// The model's session index as the session id the machine knows (ids
/// start at 1; 0 is a persistent node's owner).
fn session_id(s: usize) -> i64 {
    s as i64 + 1
}

/// The child name of the lock directory's child at `path`.
fn child_of(path: &str) -> Option<&str> {
    path.strip_prefix(DIR)?.strip_prefix('/')
}

/// The name of a watch on `path`: a child's name, or [`CHILDREN`] for the
/// directory's (a listing's child watch).
fn watch_name(path: &str) -> String {
    match path {
        DIR => CHILDREN.to_owned(),
        path => child_of(path).unwrap_or_default().to_owned(),
    }
}

/// The names of the watches `request` sets, in the order it sets them (a
/// `SetWatches`'s: its data watches, then its `exists` watches; a
/// listing's: [`CHILDREN`]).
fn watched_names(request: &Request) -> Vec<String> {
    request.watched_paths().into_iter().map(watch_name).collect()
}

/// A holder's transaction: it writes a data node outside the lock directory.
fn is_tx(ops: &[contender::Op]) -> bool {
    ops.iter()
        .any(|op| matches!(op, contender::Op::SetData { path, .. } if !path.starts_with(DIR)))
}

/// A version a request names matches: ZooKeeper takes -1 as any.
fn version_matches(named: Option<i32>, version: i32) -> bool {
    named.is_none_or(|v| v == -1 || v == version)
}

/// The contender nodes before `me` among `children`, as a semaphore
/// counts them, written here apart from `core::semaphore`: the names that
/// parse, with a valid sequence smaller than `me`'s, as (sequence, name), in
/// queue order. Empty if `me` does not parse.
/// The last failed request's error as the library's carrier classifies it
/// (its `request_error`, from the client's error behind the fault): no
/// answer came, or any other error (a garbled answer is the client's own).
fn request_error(fault: Fault<Error>) -> RequestError<Error> {
    match fault {
        Fault::Carrier(Error::Unanswered) => RequestError::Unanswered(Error::Unanswered),
        Fault::Carrier(e) => RequestError::Answered(e),
        Fault::Garbled => RequestError::Answered(Error::Failed),
    }
}

/// The error itself, a refused transaction's the failing operation's (as
/// the library's client reports it).
fn cause(e: &Error) -> &Error {
    match e {
        Error::Refused { error, .. } => cause(error),
        other => other,
    }
}

fn predecessors(me: &str, children: &[String]) -> Vec<(i32, String)> {
    let Ok(mine) = me.parse::<NodeName>() else {
        return Vec::new();
    };
    let mut before: Vec<(i32, String)> = children
        .iter()
        .filter_map(|name| Some((name.parse::<NodeName>().ok()?.seq(), name.clone())))
        .filter(|(seq, _)| is_valid_seq(*seq) && *seq < mine.seq())
        .collect();
    before.sort();
    before
}

/// The semaphore's rule, written here apart from `core::semaphore`: `me`
/// holds one of `permits` permits over `children` when it is there, its
/// sequence is valid and nobody else's, no contender before it carries
/// another permit count, and fewer than `permits` contenders precede it.
fn permit_holds(me: &str, children: &[String], permits: u32) -> bool {
    let Ok(mine) = me.parse::<NodeName>() else {
        return false;
    };
    let shared = children
        .iter()
        .filter(|name| *name != me)
        .any(|name| name.parse::<NodeName>().is_ok_and(|n| n.seq() == mine.seq()));
    let before = predecessors(me, children);
    children.iter().any(|name| name == me)
        && is_valid_seq(mine.seq())
        && !shared
        && before
            .iter()
            .all(|(_, name)| permits_of(name).is_none_or(|theirs| theirs == permits))
        && before.len() < permits as usize
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Link {
    Connected,
    Disconnected,
    Expired,
}

/// The lock directory.
#[derive(Debug, Clone)]
struct Dir {
    acl: u32,
    /// A container: the server removes it once it is empty (after it had a child).
    container: bool,
    /// The child-version counter: the sequence of the next child.
    cversion: i32,
    /// Its data: the release record, or a stranger's.
    data: String,
    /// Its data version.
    version: i32,
    /// The zxid that made it: which directory it is.
    czxid: u64,
    /// The zxid of the last creation or deletion of a child (its making's
    /// at first): what a reconnection's `SetWatches` compares a child
    /// watch against.
    pzxid: u64,
}

/// A request, as the server gets it.
#[derive(Debug, Clone)]
enum Op {
    /// A contender's request, as `core::wire` built it. A `Recreate`
    /// carries the ACL the carrier kept from the `GetAcl` it follows, as a
    /// client's call does (`None`: none read: the server's default), and
    /// which directory it was read from (for the check only: the request
    /// does not carry it).
    Wire {
        request: Request,
        acl: Option<(u32, u64)>,
    },
    /// A candidate's announcement: `setData` of `data` on its node, if the
    /// node of that name is still the one made at `czxid` (the real write
    /// is conditional on the version read).
    Announce { name: String, czxid: u64, data: Vec<u8> },
    /// `removeWatches` of the session's watch on a node: the client drops a
    /// watch the wire does not keep.
    Unwatch { name: String },
}

impl Op {
    /// The request as the trace shows it.
    fn shown(&self) -> String {
        match self {
            Op::Wire { request, .. } => shown_request(request),
            Op::Announce { name, data, .. } => format!("Announce {name} {:?}", text(data)),
            Op::Unwatch { name } => format!("Unwatch {name}"),
        }
    }
}

/// Data as the trace shows it.
fn text(data: &[u8]) -> String {
    String::from_utf8_lossy(data).into_owned()
}

/// A request as the trace shows it: children by their name, data as text.
fn shown_request(request: &Request) -> String {
    let name = |path: &str| child_of(path).unwrap_or(path).to_owned();
    match request {
        Request::Create {
            path,
            data,
            mode,
            acl,
            ..
        } => format!("Create {} {mode:?} {acl:?} {:?}", name(path), text(data)),
        Request::Multi { ops } => {
            let ops: Vec<String> = ops
                .iter()
                .map(|op| match op {
                    contender::Op::Check { path, version } => format!("check {} {version:?}", name(path)),
                    contender::Op::Create { path, .. } => format!("create {}", name(path)),
                    contender::Op::Delete { path, version } => format!("delete {} {version:?}", name(path)),
                    contender::Op::SetData { path, data, .. } => {
                        format!("set {} {:?}", name(path), text(data))
                    }
                })
                .collect();
            format!("Multi [{}]", ops.join(", "))
        }
        Request::GetData { path, watch } => format!("GetData {} watch {watch}", name(path)),
        Request::SetWatches {
            relative_zxid,
            data,
            exist,
        } => {
            let names = |paths: &[String]| paths.iter().map(|p| name(p)).collect::<Vec<_>>().join(" ");
            format!(
                "SetWatches relative {relative_zxid} data [{}] exist [{}]",
                names(data),
                names(exist)
            )
        }
        Request::Exists { path, watch } => format!("Exists {} watch {watch}", name(path)),
        Request::Delete { path, version } => format!("Delete {} {version:?}", name(path)),
        other => format!("{other:?}"),
    }
}

/// An answer as the trace shows it: data as text.
fn shown(answer: &Result<Reply, Error>) -> String {
    match answer {
        Ok(Reply::Data { data, stat }) => format!("Ok(Data {:?} {stat:?})", text(data)),
        Ok(Reply::Reads(reads)) => {
            let reads: Vec<Result<String, &Error>> = reads.iter().map(|r| r.as_deref().map(text)).collect();
            format!("Ok(Reads {reads:?})")
        }
        other => format!("{other:?}"),
    }
}

/// A reply, as the client gets it.
#[derive(Debug, Clone)]
struct Answered {
    answer: Result<Reply, Error>,
    /// A read's: the node's mzxid, which the client re-registers its data
    /// watch at after a reconnection.
    mzxid: Option<u64>,
    /// `GetAcl`'s: the ACL itself (the carrier keeps it for `Recreate`),
    /// and which directory it was read from.
    acl: Option<(u32, u64)>,
}

impl Answered {
    fn of(answer: Result<Reply, Error>) -> Answered {
        Answered {
            answer,
            mzxid: None,
            acl: None,
        }
    }
}

#[derive(Debug, Clone)]
enum Msg {
    Reply {
        id: u64,
        answered: Answered,
    },
    /// A watch fired: its kind, with the session's state.
    Watch {
        name: String,
        kind: WatchedKind,
        state: SessionState,
        /// A data change's: the write it reports (the node's mzxid then),
        /// for the checks (the client sees no zxid in an event).
        write: Option<u64>,
    },
    /// The session's state changed: the connection was lost or made again,
    /// or the session expired.
    State(SessionState),
}

/// What a reconnection's `SetWatches` (relative to the session's last
/// zxid, as the client sends it) does with a watch the client keeps: fire
/// at once, or set it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rearm {
    /// A data watch a read set (`getData`, or `exists` on a node that
    /// exists): fired by the node's deletion, or a write after this mzxid,
    /// the read's. (The same as relative to the session's last zxid: that
    /// is at least the read's, and a write whose event the client lost
    /// came after every reply it saw.)
    Read(u64),
    /// A data watch a `SetWatches` set: no read, so relative to the
    /// session's last zxid (`Session::last_zxid`).
    Relative,
    /// An `exists` watch on an absent node: fired by its creation.
    Exist,
    /// A child watch on the lock directory (a listing's): fired by its
    /// deletion, or (`NodeChildrenChanged`) if a child was made or deleted
    /// after the session's last zxid (the directory's pzxid is larger).
    Children,
}

impl Rearm {
    /// A data watch (a node that existed when it was set).
    fn data(self) -> bool {
        matches!(self, Rearm::Read(_) | Rearm::Relative)
    }
}

/// A watch the client keeps (the wire said so), until its event comes.
#[derive(Debug, Clone)]
struct Kept {
    name: String,
    /// Whose it is.
    whose: Watch,
    /// What a reconnection does with it.
    rearm: Rearm,
    /// Registered before its request was sent (a `SetWatches`: the server
    /// fires what changed before it answers), and not answered yet: the
    /// request's id. An event that comes meanwhile is held
    /// (`Session::early`) until the answer, which hands it over with the
    /// watch, or drops both.
    awaiting: Option<u64>,
    /// Dropped and left to fire: the client still has it (it registers it
    /// again after a reconnection) and ignores its event.
    detached: bool,
}

struct Session {
    contender: usize,
    state: Link,
    /// Sent, not applied yet.
    inflight: VecDeque<(u64, Op)>,
    /// Replies and events not delivered yet, with the zxid they were made at.
    outbound: VecDeque<(u64, Msg)>,
    /// The watches the client keeps, in the order set.
    registry: Vec<Kept>,
    /// The largest zxid of the replies the client got: what a
    /// reconnection sets its watches again relative to.
    last_zxid: u64,
    /// Events of watches registered for a request not answered yet
    /// (`Kept::awaiting`), held for its answer.
    early: Vec<Early>,
    /// How many times the client connected again (the client's
    /// `connections()`, which the driver reads before each request).
    connection: u64,
    /// The connection on which the server last answered this session's
    /// `getData` of a node it made (READ allowed then).
    read_own: Option<u64>,
    /// The watches whose removal the client asked while a request that
    /// sets a watch on the same node was in flight: sent once those are
    /// answered, unless one set its watch (`World::send_unwatch`).
    deferred: BTreeSet<String>,
}

/// An event that came for a watch whose request was not answered yet (a
/// `SetWatches`'s, fired at once): the watch is used up, and its event is
/// handed over with the answer.
#[derive(Debug, Clone)]
struct Early {
    /// The request's id.
    id: u64,
    name: String,
    whose: Watch,
    kind: WatchedKind,
    state: SessionState,
    write: Option<u64>,
}

/// A carrier's watch of a wait, as the library's watch future: set, fired
/// with its event not asked for yet, or done (its event given).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Handle {
    Pending,
    Fired(WatchedKind, SessionState),
    Done,
}

/// How the carrier answers its table when it asks whether a watch fired
/// (`wire::Run::gather`, `wire::Run::pump`): its event, once; asked again
/// after it gave it (a future polled after it completed, which panics in
/// the library), `again` names it.
fn ask<'a>(
    handles: &'a mut BTreeMap<String, Handle>,
    again: &'a mut Option<String>,
) -> impl FnMut(&mut String) -> wire::Fired + 'a {
    move |name: &mut String| match handles.get(name.as_str()).copied() {
        Some(Handle::Fired(kind, state)) => {
            handles.insert(name.clone(), Handle::Done);
            Some((kind, state))
        }
        Some(Handle::Done) => {
            again.get_or_insert_with(|| name.clone());
            None
        }
        Some(Handle::Pending) | None => None,
    }
}

/// Who deleted a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum By {
    /// A request of session `s`: a plain deletion, or the release record's transaction.
    Session { s: usize, record: bool },
    /// Its session's expiry.
    Expiry,
    /// A downgrade of session `s` (its reader took the node's place).
    Downgrade { s: usize },
    /// A stranger.
    Stranger,
}

struct Node {
    name: String,
    /// The session that made it; `None` for a stranger's (persistent) node.
    owner: Option<usize>,
    seq: i32,
    czxid: u64,
    mzxid: u64,
    /// Its data version.
    version: i32,
    dzxid: Option<u64>,
    deleted_by: Option<By>,
    /// A revocation request was written to it.
    revoke: bool,
    /// The contender its ACL denies READ (its own lock's, which made it).
    denied: Option<usize>,
    /// The contender its ACL lets READ alone (its own lock's, which made
    /// it): every other is denied.
    private: Option<usize>,
    /// Its data: empty, a peer's identity, a candidate's announcement, a
    /// revocation request, or a stranger's.
    data: Vec<u8>,
}

/// The order in which a reconnection delivers the events of the watches it
/// registers again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Order {
    Random,
    /// The contender's own node's event last.
    OwnLast,
}

// ---- the contenders --------------------------------------------------------

/// What an outstanding request is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    /// Request `index` of the exchange `serial`.
    Exchange { serial: u64, index: usize },
    /// The removal of a watch the wire does not keep (not awaited).
    Unwatch,
    /// A candidate's announcement (not awaited).
    Announce,
    /// A holder's transaction (`transaction::guarded`), by its serial.
    Tx { serial: u64 },
    /// A look of the poll `index` of the wait's polls `serial`.
    Look { serial: u64, index: usize },
}

/// The polls of a wait that may not read the nodes it waits on
/// (`Wait { poll: true }`), carried by the interpreter the library runs
/// (`wire::Poll`), and which wait they are.
struct Polls {
    serial: u64,
    /// Each polled node's poll, and whether a look of it is under way (one
    /// not under way is due: `Kind::Look` sends it, after its pause).
    polls: Vec<(wire::Poll, bool)>,
}

/// An exchange under way (carried by the interpreter the library runs,
/// `wire::Carry`), and which it is.
struct Carried {
    serial: u64,
    carry: Carry<String, Error>,
}

impl Carried {
    fn new(serial: u64, exchange: Exchange) -> Carried {
        // The model's requests are retried until answered: its connection
        // comes back (`failing_for` stays zero).
        let carry = Carry::new(exchange, Backoff::request(Duration::from_secs(1)));
        Carried { serial, carry }
    }

    fn exchange(&self) -> &Exchange {
        self.carry.exchange()
    }
}

/// Where a contender's exchange is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// The exchange of the acquire's last action.
    Acquire,
    /// The keeper's read of the held node.
    Keeper,
    /// The keeper's of the writer whose downgrade is under way.
    WriterKeeper,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CState {
    Idle,
    /// From the create to the grant (or the wait's end).
    Acquiring,
    /// Granted, release not begun.
    Holding,
    Releasing,
    /// Given up or failed: the machine withdraws.
    Withdrawing,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Granted, then released: how the release ended.
    Released(Ended),
    GaveUp,
    Failed(Failure),
}

/// One acquire of a contender.
struct Acq {
    mode: Mode,
    may_wait: bool,
    has_deadline: bool,
    deadline_fired: bool,
    layout: Layout,
    token: Uuid,
    /// The machine checks the directory's data.
    check_data: bool,
    /// The zxid when it started, and the directory's removals by then.
    started: u64,
    removals: u32,
    machine: Machine,
    /// The acquire's side of the wire: one per acquire.
    wire: Wire,
    /// The exchange of the machine's last action, under way.
    exchange: Option<Carried>,
    /// The keeper's read-and-watch of the held node, under way, and
    /// whether it is a downgrading writer's.
    keeping: Option<(Carried, bool)>,
    /// The create answered that the name exists (a name taken at the counter's limit).
    create_exists: bool,
    /// The node the machine took as its own (name, czxid), once checked.
    taken: Option<(String, u64)>,
    /// The last action was the wait's `Wait`.
    waiting: bool,
    /// The nodes the wait is concerned with since its last `SetWatches`:
    /// the watched node, and a semaphore's other watched nodes (`also`).
    watching: BTreeSet<String>,
    /// The carrier's watches for the wait, by their nodes' names, as the
    /// library's watch futures: each set by an answer, holding its event
    /// once it fired until the table asks for it (`wire::Run::gather`,
    /// `wire::Run::pump`), and never asked again after it gave it.
    handles: BTreeMap<String, Handle>,
    /// The session's state channel as the driver's `StateWatcher` holds it
    /// (a `tokio::sync::watch`: the latest change not asked for yet), until
    /// `wire::Run::gather` or `wire::Run::pump` asks.
    states: Option<SessionState>,
    /// The acquire's loop ([`wire::Run`], the library's driver's): the
    /// watches the carrier holds for the wait, by their nodes' names (my
    /// node's, the release marker's, the watched nodes': [`wire::Watches`]),
    /// what they and the session gave and the machine did not take yet
    /// ([`wire::Arrivals`]; the watched nodes' events that fire while an
    /// exchange is under way stay there for the next `Wait`, and go with
    /// the watches when the carrier sends new ones, but those of the nodes
    /// the exchange keeps, [`wire::Exchange::kept`]), the place last told,
    /// the connection its requests went on, and what failed the request
    /// the last exchange blamed or the look that ended the wait's poll,
    /// since the machine's last request. The model's deadline is an event
    /// of its own ([`World::deadline`]): the run's deadlines are none.
    run: wire::Run<u64, Fault<Error>, String>,
    /// The polls of the wait (`Wait { poll: true }`), until it ends.
    polls: Option<Polls>,
    waited: bool,
    last: &'static str,
    mark: bool,
    /// The keeper's loop, the core's (`wire::Keeping`), from the grant on.
    keeper: Option<wire::Keeping<String>>,
    /// The server refused the release record.
    refused: bool,
    /// The release began in a live session.
    released_live: bool,
    /// The directory's ACL, as the last `GetAcl` read it, for `Recreate`
    /// (and which directory it was read from, for the check).
    acl: Option<(u32, u64)>,
    outcome: Option<Outcome>,
    /// A downgrade's reader (the writer waits in `Contender::writer`).
    downgrade: bool,
    /// Told of its grant (its machine answered `Grant`).
    granted: bool,
    /// The reader node its `Replace` makes.
    replace_reader: Option<String>,
    /// The children of the last listing answered to the acquire's exchange
    /// (what the machine decides on).
    listing: Option<Vec<String>>,
    /// The last write to its node the wait was told of (its watch's
    /// data change: the node's mzxid then).
    own_told: Option<u64>,
    /// Answers to the acquire's requests (its exchange's, its looks') lost
    /// since the machine's last request.
    unanswered: u32,
    /// The wait's last `SetWatches` carried the watched node's watch in
    /// my node's request, unread (`blind`: two data paths).
    blind: bool,
    /// The wait's `ReadWatched` since its last `SetWatches`: at most one.
    read_watched: u32,
}

struct Contender {
    session: usize,
    state: CState,
    acq: Option<Acq>,
    /// Every request sent and not answered yet: whose it is, and the
    /// request (sent again as it is after a lost connection, if retried).
    pending: BTreeMap<u64, (Owner, Op)>,
    /// The zxid of the message being delivered.
    basis: u64,
    acquires: u32,
    outcomes: Vec<Outcome>,
    /// An acquire of this lock found the directory's data to be the lock's.
    data_checked: bool,
    /// An acquire of this lock handle in this session was seen to read its
    /// own node (`Contender::own_readable`), on this connection of the
    /// session (`Session::connection`): the next ones on the same
    /// connection are told (`Contender::with_own_readable`), as the
    /// library's driver keeps it per `SharedLock` (its session and lock
    /// path).
    own_readable: Option<u64>,
    /// The holding writer whose downgrade is under way (its reader is `acq`).
    writer: Option<Acq>,
    /// Its transactions sent and not answered: by serial, the transaction
    /// and the holder node it checks (full path).
    txs: BTreeMap<u64, (Guarded, String)>,
}

/// Counts of what happened across runs, to show what the schedules reach.
macro_rules! stats {
    ($($field:ident: $doc:literal,)*) => {
        #[derive(Debug, Default, Clone)]
        struct Stats {
            $(#[doc = $doc] $field: u64,)*
        }

        impl Stats {
            fn add(&mut self, other: &Stats) {
                $(self.$field += other.$field;)*
            }
        }
    };
}

stats! {
    runs: "Schedules run.",
    steps: "Steps taken.",
    grants: "Grants.",
    handoffs: "Grants by a hand-off (no new listing).",
    record_grants: "Grants after reading the release record.",
    checked_grants: "Grants after an own-node check.",
    marker_grants: "Grants by a release marker's creation (no read after the event).",
    marker_watches: "Release markers watched.",
    unwatches: "Release markers' watches removed (the wait ended without their event).",
    foreign_markers: "Markers made by a stranger (which then refuse a release's marker).",
    read_taken: "Contender nodes whose READ an operator took from their own session.",
    granted_unreadable_gone: "Grants of a contender whose node, its READ taken away, a stranger deleted (it cannot be told).",
    marker_refused: "Releases refused because a stranger's marker had the release marker's name.",
    peer_grants: "Grants of contenders in a peer's layout (which never mark).",
    lost: "Acquires failed with Lost.",
    session_ended: "Acquires failed with SessionEnded.",
    exhausted: "Acquires failed with Exhausted.",
    holds_data: "Acquires failed with DirectoryHoldsData.",
    listing_refused: "Acquires failed with ListingTooLarge (a listing past the limit).",
    gave_up: "Acquires given up (try, or the deadline).",
    retries: "Answers lost to a broken connection (Error::Unanswered).",
    disconnects: "Connections lost.",
    expiries: "Sessions expired.",
    foreign: "Strangers' writes, deletions and replacements.",
    found_own: "Nodes found by find-own after a create's answer was lost.",
    others_token: "Find-own's candidates owned by another session.",
    held_lost: "Holders told their node is gone or their session over.",
    released_lost: "Releases that found the lock lost.",
    release_expired: "Releases begun in a live session and ended by its expiry.",
    refused_records: "Release records the directory's ACL refused.",
    dirs_made: "Directories made (CreateDir).",
    parents_made: "Parents made (CreateParents).",
    no_containers: "Containers refused by a server without them.",
    dirs_removed: "Empty container directories removed.",
    recycles: "Directories recycled.",
    recycles_refused: "Recycles refused: the directory had children.",
    recycles_raced: "Recycles of a directory made again since its ACL was read (with another ACL).",
    downgrades: "Downgrades whose reader took the writer node's place.",
    downgrades_checked: "Of those, downgrades that checked a reader queued after the writer.",
    downgrades_kept: "Downgrades that kept the writer node (a writer right behind it).",
    downgrade_handoffs: "Readers granted by the deletion of a writer node that a downgrade replaced.",
    leaders_named: "Observations that named a leader.",
    leader_changes: "Changes of the leader an observer named.",
    stats_left_out: "Created nodes' stats a transaction's answer left out (ZOOKEEPER-4026).",
    own_unreadable: "Waits refused the watch on their own node by its ACL (NoAuth).",
    polls: "Waits that polled the nodes they waited on (their ACL denies the waiter READ).",
    looks: "Looks of those polls (`exists` without a watch).",
    looks_refused: "Looks a server that checks READ for `exists` answered NoAuth (the node there).",
    polls_gone: "Polls ended by a look that found the node gone.",
    batched: "Waits that set their own node's and the marker's watches in one SetWatches (their handle knew it may read its nodes).",
    set_watches_fired: "Events a SetWatches fired at once (its own node gone or written since its czxid, the marker there).",
    places_checked: "Places in the queue (`Contender::place`) checked as they changed.",
    places_waiting: "Of those, places of a wait (a node to wait on, ahead > 0).",
    txs_sent: "Holders' transactions sent.",
    txs_unsent: "Holders' transactions not sent: the guard knew its lock lost.",
    txs_committed: "Holders' transactions the server committed.",
    txs_refused: "Holders' transactions the server refused (the holder's node gone or unreadable).",
    txs_forged: "Holders' transactions whose check a stranger's node of the holder's name passed.",
    txs_answered: "Holders' transactions whose answer the holder read (committed or refused).",
    permit_grants: "Grants of a semaphore's permit.",
    permit_handoffs: "Of those, grants by a hand-off (a watched node's deletion, no new listing).",
    several_watched: "Waits that watched more than one node (a semaphore's, with `also`).",
    also_gone: "Semaphore waits whose `exists` found one of the other watched nodes gone.",
    watchers_at_deletion: "Deletions of a node that a contender kept a watch on (semaphore worlds).",
    herd_full: "Of those, deletions that N contenders watched (the herd bound reached).",
    permits_disagree: "Acquires failed with PermitsDisagree (a stranger's node with another N before).",
    reports: "Failed acquires' reports (`Failure::reported`) checked against the model.",
    reported_expired: "Of those, SessionExpired (a node gone or the session ended, in an expired session).",
    reported_lost: "Of those, Lost naming the node gone (mine, or a downgrade's writer node).",
    reported_request: "Of those, RequestFailed or NoAnswer (the last failed request's error).",
    foreign_nodes: "Strangers' nodes made in the directory (a bare writer, another N, a foreign name).",
    waiters_at_rest: "Waiters checked at rest (the drain, before holders release).",
    lingered_events: "Events of watches a semaphore's wait left to fire once dropped (ignored).",
    over_n_notified: "Deletions whose watchers on the server, lingering watches included, exceeded N.",
    children_fired: "Events of listings' child watches on the lock directory the server sent (a child made or deleted, the directory deleted).",
    listing_events: "Of those, events a wait took (`Event::Listing`).",
    blind: "Waits whose SetWatches set the watched node's watch unread, with my node's (`blind`).",
    blind_silent: "Of those, on a watched node this session may not read (the server is silent of it).",
    read_watched: "Reads of the watched node after a listing's watch fired (`ReadWatched`).",
    read_watched_refused: "Of those, answered NoAuth: the watched node is then polled.",
    read_watched_gone: "Of those, answered NoNode: the watched node is gone.",
}

// ---- the world -------------------------------------------------------------

struct World {
    mutation: Mutation,
    zxid: u64,
    negative_once: bool,
    /// The lock directory, if it exists; its parents, if they do.
    dir: Option<Dir>,
    parents: bool,
    /// The server has containers (3.6 and later).
    containers: bool,
    /// Contenders (bits) that a directory ACL other than the default denies
    /// WRITE: the release record is refused them.
    restricted: u32,
    /// Contenders (bits) whose lock gives the nodes it makes an ACL that
    /// denies its own identity READ (every other identity may read them).
    unreadable: u32,
    /// Contenders (bits) whose lock gives the nodes it makes an ACL that
    /// lets only its own identity READ (as `CreateAcl::ReadOnlyOthers`
    /// without the others' READ): the waits on them poll.
    private: u32,
    /// The server checks READ for an `exists` of a node that is there
    /// (ZooKeeper 3.7.3, 3.8.4 and 3.9.2 on, ZOOKEEPER-2590).
    exists_checks_read: bool,
    /// Contenders (bits) that run the version before the release marker:
    /// they release with the record alone and never watch a marker.
    old: u32,
    /// The contenders do not know yet that the directory's data is the lock's.
    check_data: bool,
    /// Each change of the directory's data (its making and removal
    /// included): the zxid, and whether the data is the lock's.
    dir_history: Vec<(u64, bool)>,
    dir_removals: u32,
    /// The ACL of every directory ever made, by czxid.
    dir_acls: BTreeMap<u64, u32>,
    /// Every node ever made, by czxid (deleted ones keep their deletion's zxid).
    nodes: BTreeMap<u64, Node>,
    /// The live children: name to czxid.
    live: BTreeMap<String, u64>,
    /// Strangers' nodes named as release markers (a release's own marker
    /// lives only inside its transaction). Children of the directory like
    /// any: listed, and keeping it from being empty.
    markers: BTreeSet<String>,
    /// Every such marker ever made: its name, the zxids of its making and
    /// of its deletion.
    marker_spans: Vec<(String, u64, Option<u64>)>,
    watches: BTreeMap<String, BTreeSet<usize>>,
    /// The sessions with a child watch on the lock directory (a listing's,
    /// `Request::List { watch: true }`): one per session on the server.
    child_watches: BTreeSet<usize>,
    /// The watches on a contender's own node that the server keeps silent
    /// (session, name) and that a wait could not know of: one the server
    /// dropped unheard as it fired (the node's ACL having come to deny its
    /// owner READ) on a connection where the session had read the node
    /// (READ was taken after that read), or one a wait's `SetWatches`
    /// (which says nothing of READ) set on such a connection. A wait that
    /// trusts a watch from an older connection could have asked again.
    silenced: BTreeSet<(usize, String)>,
    /// The held nodes' watches the server keeps silent (session, name):
    /// dropped unheard as they fired, or set again by a reconnection after
    /// READ was taken (the server checks READ only as a watch fires). A
    /// guard's keeper does not read its node again after a reconnection:
    /// only the session's end and the lease tell it, as documented.
    deaf: BTreeSet<(usize, String)>,
    sessions: Vec<Session>,
    contenders: Vec<Contender>,
    next_id: u64,
    rng: Rng,
    step: usize,
    tracing: bool,
    trace: Vec<String>,
    stats: Stats,
    /// Contenders write peers' layouts too (see `layout_of`).
    mixed: bool,
    /// The largest listing an acquire queues behind
    /// (`Contender::with_listing_limit`), in a third of the schedules: room
    /// for two to four names.
    listing_limit: Option<usize>,
    /// A rule the model checks as it applies a request, broken.
    broken: Option<String>,
    /// The leader an observer named last, and its term.
    observed: Option<(String, u64)>,
    /// The server leaves a created node's stat out of a transaction's
    /// answer (ZOOKEEPER-4026): in a scenario only.
    stat_left_out: bool,
    /// The scheduler favours the downgrade's race (more downgrades, starts
    /// and deadlines, fewer releases): only for the mutation that needs
    /// it to be seen.
    race: bool,
    /// The data nodes outside the lock directory that holders' transactions
    /// write (`/data/c<n>`, one per contender, made with the world): by
    /// path, the data and the zxid of its last write.
    data: BTreeMap<String, (Vec<u8>, u64)>,
    /// Every committed write of a holder's transaction: its zxid, the
    /// contender, the holder node it checked.
    commits: Vec<(u64, usize, String)>,
    /// The holders' transactions applied: by request id, committed or not.
    tx_applied: BTreeMap<u64, bool>,
    /// The contenders are a counting semaphore's with this many permits
    /// (`Contender::with_permits`), all native writers; `None`: a
    /// read/write lock's.
    permits: Option<NonZeroU32>,
}

/// The layout contender `c` writes in a mixed world: every layout in turn
/// (the Curator mutex has no readers: Curator's read/write lock then).
/// Peer-layout contenders never write the release record, as peers.
fn layout_of(c: usize, mode: Mode) -> Layout {
    match Layout::ALL[c % Layout::ALL.len()] {
        Layout::CuratorMutex if mode == Mode::Read => Layout::Curator,
        layout => layout,
    }
}

impl World {
    fn new(contenders: usize, counter: i32, mutation: Mutation) -> World {
        let mut world = World {
            mutation,
            zxid: 1,
            negative_once: false,
            dir: Some(Dir {
                acl: DIR_ACL,
                container: true,
                cversion: counter,
                data: String::new(),
                version: 0,
                czxid: 1,
                pzxid: 1,
            }),
            parents: true,
            containers: true,
            restricted: 0,
            unreadable: 0,
            private: 0,
            exists_checks_read: false,
            old: 0,
            check_data: false,
            dir_history: vec![(1, true)],
            dir_removals: 0,
            dir_acls: BTreeMap::from([(1, DIR_ACL)]),
            nodes: BTreeMap::new(),
            live: BTreeMap::new(),
            markers: BTreeSet::new(),
            marker_spans: Vec::new(),
            watches: BTreeMap::new(),
            child_watches: BTreeSet::new(),
            silenced: BTreeSet::new(),
            deaf: BTreeSet::new(),
            sessions: Vec::new(),
            contenders: Vec::new(),
            next_id: 1,
            rng: Rng(0),
            step: 0,
            tracing: true,
            trace: Vec::new(),
            stats: Stats::default(),
            mixed: false,
            listing_limit: None,
            broken: None,
            observed: None,
            stat_left_out: false,
            race: false,
            data: BTreeMap::new(),
            commits: Vec::new(),
            tx_applied: BTreeMap::new(),
            permits: None,
        };
        for c in 0..contenders {
            let session = world.new_session(c);
            world.contenders.push(Contender {
                session,
                state: CState::Idle,
                acq: None,
                pending: BTreeMap::new(),
                basis: 0,
                acquires: 0,
                outcomes: Vec::new(),
                data_checked: false,
                own_readable: None,
                writer: None,
                txs: BTreeMap::new(),
            });
            world.data.insert(data_path(c), (Vec::new(), 1));
        }
        world
    }

    fn new_session(&mut self, contender: usize) -> usize {
        self.sessions.push(Session {
            contender,
            state: Link::Connected,
            inflight: VecDeque::new(),
            outbound: VecDeque::new(),
            registry: Vec::new(),
            last_zxid: 0,
            early: Vec::new(),
            connection: 0,
            read_own: None,
            deferred: BTreeSet::new(),
        });
        self.sessions.len() - 1
    }

    fn fail<T>(&self, what: String) -> Result<T, String> {
        Err(format!("step {}: {what}", self.step))
    }

    // ---- the server ----

    fn live(&self, name: &str) -> bool {
        self.live.contains_key(name)
    }

    /// The live node of that name.
    fn node(&self, name: &str) -> Option<&Node> {
        self.live.get(name).map(|czxid| &self.nodes[czxid])
    }

    /// The node made at `czxid` still exists.
    fn alive(&self, czxid: u64) -> bool {
        self.nodes.get(&czxid).is_some_and(|n| n.dzxid.is_none())
    }

    fn children(&self) -> Vec<String> {
        self.live.keys().cloned().collect()
    }

    /// What a listing answers: the contender nodes and the strangers'
    /// markers.
    fn listed(&self) -> Vec<String> {
        let mut listed = self.children();
        listed.extend(self.markers.iter().cloned());
        listed
    }

    /// What a listing applied at `zxid` answered.
    fn listed_at(&self, zxid: u64) -> Vec<String> {
        let mut listed = self.children_at(zxid);
        listed.extend(
            self.marker_spans
                .iter()
                .filter(|(_, made, gone)| *made <= zxid && gone.is_none_or(|g| g > zxid))
                .map(|(name, _, _)| name.clone()),
        );
        listed
    }

    /// The directory has no child (a stranger's marker is one).
    fn empty(&self) -> bool {
        self.live.is_empty() && self.markers.is_empty()
    }

    /// The last node made under `name`: the live one, or the last deleted
    /// (nodes are kept by czxid, made in order).
    fn last_named(&self, name: &str) -> Option<&Node> {
        self.nodes.values().rev().find(|n| n.name == name)
    }

    /// The children the directory had once the transaction `zxid` was applied.
    fn children_at(&self, zxid: u64) -> Vec<String> {
        self.nodes
            .values()
            .filter(|n| n.czxid <= zxid && n.dzxid.is_none_or(|d| d > zxid))
            .map(|n| n.name.clone())
            .collect()
    }

    /// The directory's data was the lock's at some moment from `zxid` on.
    fn lock_data_since(&self, zxid: u64) -> bool {
        let at_start = self
            .dir_history
            .iter()
            .rev()
            .find(|(z, _)| *z <= zxid)
            .is_none_or(|(_, lock)| *lock);
        at_start || self.dir_history.iter().any(|(z, lock)| *z > zxid && *lock)
    }

    /// The directory's data was not the lock's at some moment from `zxid` on.
    fn foreign_data_since(&self, zxid: u64) -> bool {
        let at_start = self
            .dir_history
            .iter()
            .rev()
            .find(|(z, _)| *z <= zxid)
            .is_some_and(|(_, lock)| !*lock);
        at_start || self.dir_history.iter().any(|(z, lock)| *z > zxid && !*lock)
    }

    fn set_dir_data(&mut self, data: String) {
        self.dir_history
            .push((self.zxid, is_lock_directory_data(data.as_bytes())));
        if let Some(dir) = self.dir.as_mut() {
            dir.data = data;
            dir.version += 1;
        }
    }

    /// Whether the directory's ACL denies session `s` WRITE.
    fn write_denied(&self, s: usize) -> bool {
        let restricted = self.restricted & (1 << self.sessions[s].contender) != 0;
        restricted && self.dir.as_ref().is_some_and(|dir| dir.acl != DEFAULT_ACL)
    }

    fn push(&mut self, s: usize, msg: Msg) {
        let zxid = self.zxid;
        self.sessions[s].outbound.push_back((zxid, msg));
    }

    /// The event of a watch on `name`, as the server sends it now.
    fn watch_msg(&self, name: &str, kind: WatchedKind, state: SessionState) -> Msg {
        let write = (kind == WatchedKind::DataChanged)
            .then(|| self.node(name).map(|node| node.mzxid))
            .flatten();
        Msg::Watch {
            name: name.to_owned(),
            kind,
            state,
            write,
        }
    }

    /// The watches on `name` fire with an event of `kind`.
    fn fire(&mut self, name: &str, kind: WatchedKind) {
        // The node under `name`, live or just deleted (the latest made):
        // its ACL may deny a watcher READ, and the server checks READ as
        // it sends a watch's event.
        let node = self.last_named(name);
        let (denied, private) = node.map_or((None, None), |n| (n.denied, n.private));
        let silent: Vec<usize> = self
            .watches
            .get(name)
            .into_iter()
            .flatten()
            .copied()
            .filter(|&s| {
                let c = self.sessions[s].contender;
                denied == Some(c) || private.is_some_and(|owner| owner != c)
            })
            .collect();
        for s in silent {
            if let Some(watchers) = self.watches.get_mut(name) {
                watchers.remove(&s);
            }
            if denied == Some(self.sessions[s].contender) {
                self.deaf.insert((s, name.to_owned()));
                if self.sessions[s].read_own == Some(self.sessions[s].connection) {
                    self.silenced.insert((s, name.to_owned()));
                }
            }
            note!(self, "s{s} is not told of {kind:?} of {name}: it may not read it");
        }
        self.fire_readable(name, kind, None);
    }

    /// As [`World::fire`], for a node only the contender `private` may read
    /// (if any): the watches of every other session fire unheard (the
    /// server checks READ as it sends a watch's event).
    fn fire_readable(&mut self, name: &str, kind: WatchedKind, private: Option<usize>) {
        if let Some(watchers) = self.watches.remove(name) {
            for s in watchers {
                if private.is_some_and(|c| self.sessions[s].contender != c) {
                    note!(self, "s{s} is not told of {kind:?} of {name}: it may not read it");
                    continue;
                }
                let msg = self.watch_msg(name, kind, SessionState::Connected);
                self.push(s, msg);
            }
        }
    }

    /// The child watches on the lock directory fire with an event of
    /// `kind` (`NodeChildrenChanged`, or `NodeDeleted` for the directory's
    /// deletion): one-shot, each session's once. Every session may read
    /// the directory, so none is left unheard; a disconnected or expired
    /// session has none (the server dropped them).
    fn fire_children(&mut self, kind: WatchedKind) {
        for s in std::mem::take(&mut self.child_watches) {
            self.stats.children_fired += 1;
            let msg = self.watch_msg(CHILDREN, kind, SessionState::Connected);
            self.push(s, msg);
        }
    }

    /// A child of the directory was made or deleted in the current
    /// transaction (a contender's node, a release marker, a stranger's
    /// node): the directory's pzxid moves, and its child watches fire,
    /// after the watches of the child itself (as ZooKeeper triggers them).
    fn children_changed(&mut self) {
        let zxid = self.zxid;
        if let Some(dir) = self.dir.as_mut() {
            dir.pzxid = zxid;
        }
        self.fire_children(WatchedKind::ChildrenChanged);
    }

    /// Makes a child in a new transaction.
    fn add_node(&mut self, name: String, owner: Option<usize>, seq: i32) -> u64 {
        self.zxid += 1;
        self.add_node_now(name, owner, seq, Vec::new())
    }

    /// Makes a child in the current transaction.
    fn add_node_now(&mut self, name: String, owner: Option<usize>, seq: i32, data: Vec<u8>) -> u64 {
        let czxid = self.zxid;
        if let Some(dir) = self.dir.as_mut() {
            dir.cversion = dir.cversion.saturating_add(1);
        }
        let denied = owner
            .map(|s| self.sessions[s].contender)
            .filter(|c| self.unreadable & (1 << c) != 0);
        let private = owner
            .map(|s| self.sessions[s].contender)
            .filter(|c| self.private & (1 << c) != 0);
        self.live.insert(name.clone(), czxid);
        self.nodes.insert(
            czxid,
            Node {
                name,
                owner,
                seq,
                czxid,
                mzxid: czxid,
                version: 0,
                dzxid: None,
                deleted_by: None,
                revoke: false,
                denied,
                private,
                data,
            },
        );
        // No `exists` watch waits on a contender's name: the directory's
        // child watches alone fire.
        self.children_changed();
        czxid
    }

    /// Deletes a live node in the current transaction.
    fn remove_node(&mut self, name: &str, by: By) {
        if let Some(permits) = self.permits {
            self.count_watchers(name, permits.get());
        }
        let zxid = self.zxid;
        let was = self.live.remove(name);
        if let Some(czxid) = was {
            let node = self.nodes.get_mut(&czxid).expect("a live node is known");
            node.dzxid = Some(zxid);
            node.deleted_by = Some(by);
        }
        if let Some(dir) = self.dir.as_mut() {
            dir.cversion = dir.cversion.saturating_add(1);
        }
        // The node's data watches first, then the directory's child watches.
        self.fire(name, WatchedKind::Deleted);
        if was.is_some() {
            self.children_changed();
        }
    }

    /// The herd a deletion of `name` wakes (a semaphore's): the contenders
    /// whose node is live and whose client keeps a watch on `name` for its
    /// wait that the server holds; at most `permits` of them.
    fn count_watchers(&mut self, name: &str, permits: u32) {
        let Some(servers) = self.watches.get(name) else {
            return;
        };
        let watchers: Vec<usize> = servers
            .iter()
            .map(|&s| self.sessions[s].contender)
            .filter(|&c| {
                let k = &self.contenders[c];
                let live = k
                    .acq
                    .as_ref()
                    .and_then(|a| a.machine.inner.czxid())
                    .is_some_and(|z| self.alive(z as u64));
                live && servers.contains(&k.session)
                    && self.sessions[k.session]
                        .registry
                        .iter()
                        .any(|kept| kept.name == name && kept.whose == Watch::Watched && !kept.detached)
            })
            .collect();
        // Lingering watches too (of waits over): their clients list
        // nothing, but the server notifies them.
        let owner = self.node(name).and_then(|node| node.owner);
        let notified = servers.iter().filter(|s| Some(**s) != owner).count();
        self.stats.over_n_notified += u64::from(notified > permits as usize);
        if watchers.is_empty() {
            return;
        }
        self.stats.watchers_at_deletion += 1;
        self.stats.herd_full += u64::from(watchers.len() == permits as usize);
        if watchers.len() > permits as usize && self.broken.is_none() {
            self.broken = Some(format!(
                "the deletion of {name} notifies {} waiters, with {permits} permits: {watchers:?}",
                watchers.len()
            ));
        }
    }

    /// Writes `data` to the live node `name` in the current transaction.
    fn write_node(&mut self, name: &str, data: Vec<u8>) {
        let zxid = self.zxid;
        if let Some(czxid) = self.live.get(name) {
            let node = self.nodes.get_mut(czxid).expect("a live node is known");
            node.mzxid = zxid;
            node.version += 1;
            node.revoke |= data == REVOKE_PAYLOAD;
            node.data = data;
        }
        self.fire(name, WatchedKind::DataChanged);
    }

    /// Whether `node`'s ACL denies session `s` READ (`exists`, listings,
    /// creates and deletions need no READ on the node).
    fn read_denied(&self, s: usize, node: &Node) -> bool {
        let c = self.sessions[s].contender;
        node.denied == Some(c) || node.private.is_some_and(|owner| owner != c)
    }

    /// A child's stat, as a read or `exists` answers it.
    fn stat(&self, node: &Node) -> Stat {
        Stat {
            czxid: node.czxid as i64,
            ephemeral_owner: node.owner.map_or(0, session_id),
        }
    }

    /// A rule of the model broken by a request (the wire sent what no
    /// carrier should): the run fails at its next check.
    fn refuse(&mut self, s: usize, request: &Request) -> Answered {
        self.broken = Some(format!(
            "s{s} sent a request the model does not know: {request:?}"
        ));
        Answered::of(Err(Error::Failed))
    }

    /// The server applies a request of session `s`.
    fn apply(&mut self, s: usize, id: u64, op: Op) {
        let answered = match op {
            Op::Wire {
                request: Request::Multi { ops },
                ..
            } if is_tx(&ops) => {
                let answered = Answered::of(self.multi(s, &ops));
                self.tx_applied.insert(id, answered.answer.is_ok());
                if answered.answer.is_ok() {
                    self.stats.txs_committed += 1;
                } else {
                    self.stats.txs_refused += 1;
                }
                answered
            }
            Op::Wire { request, acl } => self.serve(s, &request, acl),
            Op::Announce { name, czxid, data } => Answered::of(if self.live.get(&name) == Some(&czxid) {
                self.zxid += 1;
                self.write_node(&name, data);
                Ok(Reply::Done)
            } else {
                Err(Error::NoNode)
            }),
            Op::Unwatch { name } if name == CHILDREN => {
                self.child_watches.remove(&s);
                Answered::of(Ok(Reply::Done))
            }
            Op::Unwatch { name } => {
                if let Some(watchers) = self.watches.get_mut(&name) {
                    watchers.remove(&s);
                }
                Answered::of(Ok(Reply::Done))
            }
        };
        self.push(s, Msg::Reply { id, answered });
    }

    /// The answer to a request of the wire's, as ZooKeeper gives it.
    fn serve(&mut self, s: usize, request: &Request, acl: Option<(u32, u64)>) -> Answered {
        let dir = request.path() == DIR;
        match request {
            Request::Create {
                path,
                data,
                mode,
                acl: wire::Acl::Contender,
            } if *mode == CreateMode::EphemeralSequential => match child_of(path) {
                Some(prefix) => Answered::of(self.create(s, prefix, data)),
                None => self.refuse(s, request),
            },
            Request::Create {
                mode,
                acl: wire::Acl::Directory,
                ..
            } if dir && matches!(mode, CreateMode::Container | CreateMode::Persistent) => {
                Answered::of(self.create_dir(*mode == CreateMode::Container))
            }
            Request::MakePath { path } if path == PARENT => {
                // Made, or there already: answered alike.
                if !self.parents {
                    self.zxid += 1;
                    self.parents = true;
                    self.stats.parents_made += 1;
                }
                Answered::of(Ok(Reply::Done))
            }
            // With `watch`, a child watch on the directory (one per
            // session: a second listing's is the same), only if it exists.
            Request::List { watch, .. } if dir => Answered::of(match &self.dir {
                Some(dir) => {
                    let listed = Ok(Reply::Children {
                        children: self.listed(),
                        data_length: dir.data.len() as i32,
                    });
                    if *watch {
                        self.child_watches.insert(s);
                    }
                    listed
                }
                None => Err(Error::NoNode),
            }),
            // One server: nothing to catch up with.
            Request::Sync { .. } => Answered::of(Ok(Reply::Done)),
            Request::GetData { watch: false, .. } if dir => Answered::of(match &self.dir {
                Some(dir) => Ok(Reply::Data {
                    data: dir.data.clone().into_bytes(),
                    stat: Stat {
                        czxid: dir.czxid as i64,
                        ephemeral_owner: 0,
                    },
                }),
                None => Err(Error::NoNode),
            }),
            Request::GetData { path, watch } => match child_of(path) {
                // A data watch, only on a node that exists.
                Some(name) => match self.node(name) {
                    Some(node) if self.read_denied(s, node) => Answered::of(Err(Error::NoAuth)),
                    Some(node) => {
                        let mine = node.owner == Some(s);
                        let answered = Answered {
                            answer: Ok(Reply::Data {
                                data: node.data.clone(),
                                stat: self.stat(node),
                            }),
                            mzxid: Some(node.mzxid),
                            acl: None,
                        };
                        if mine {
                            self.sessions[s].read_own = Some(self.sessions[s].connection);
                        }
                        if *watch {
                            self.watches.entry(name.to_owned()).or_default().insert(s);
                        }
                        answered
                    }
                    None => Answered::of(Err(Error::NoNode)),
                },
                None => self.refuse(s, request),
            },
            Request::Exists { path, watch } => match child_of(path) {
                // A server from 3.7.3, 3.8.4 and 3.9.2 on checks READ for an
                // `exists` of a node that is there (not of one that is gone).
                // (Of the nodes only their own identity may read: a lock
                // whose own nodes deny it READ cannot find its node after a
                // lost create on such a server.)
                Some(name)
                    if self.exists_checks_read
                        && self.node(name).is_some_and(|node| {
                            node.private.is_some_and(|c| c != self.sessions[s].contender)
                        }) =>
                {
                    Answered::of(Err(Error::NoAuth))
                }
                Some(name) => {
                    // A stranger's marker has no contender's stat.
                    let stat = match self.node(name) {
                        Some(node) => Some(self.stat(node)),
                        None => self.markers.contains(name).then_some(Stat {
                            czxid: 0,
                            ephemeral_owner: 0,
                        }),
                    };
                    // Set whether the node exists or not (then it waits
                    // for its creation). On a node that exists it is a data
                    // watch: the client registers it again at that mzxid.
                    let mzxid = self.node(name).map(|node| node.mzxid);
                    if *watch {
                        self.watches.entry(name.to_owned()).or_default().insert(s);
                    }
                    Answered {
                        answer: Ok(Reply::Stat(stat)),
                        mzxid,
                        acl: None,
                    }
                }
                None => self.refuse(s, request),
            },
            Request::Delete { path, version } => match child_of(path) {
                Some(name) => Answered::of(match self.node(name).map(|n| n.version) {
                    None => Err(Error::NoNode),
                    Some(v) if !version_matches(*version, v) => Err(Error::BadVersion),
                    Some(_) => {
                        self.zxid += 1;
                        self.remove_node(name, By::Session { s, record: false });
                        Ok(Reply::Done)
                    }
                }),
                None => self.refuse(s, request),
            },
            Request::Multi { ops } => Answered::of(self.multi(s, ops)),
            Request::ReadAll { paths } => match paths.as_slice() {
                // The release record and my node: each read on its own.
                [record, mine] if record == DIR => {
                    let record = self
                        .dir
                        .as_ref()
                        .map(|dir| dir.data.clone().into_bytes())
                        .ok_or(Error::NoNode);
                    let mine = match child_of(mine).and_then(|name| self.node(name)) {
                        Some(node) if self.read_denied(s, node) => Err(Error::NoAuth),
                        Some(node) => Ok(node.data.clone()),
                        None => Err(Error::NoNode),
                    };
                    Answered::of(Ok(Reply::Reads(vec![record, mine])))
                }
                _ => self.refuse(s, request),
            },
            Request::SetWatches {
                relative_zxid,
                data,
                exist,
            } => {
                let names: Option<Vec<(&str, bool)>> = data
                    .iter()
                    .map(|path| (path, true))
                    .chain(exist.iter().map(|path| (path, false)))
                    .map(|(path, data)| child_of(path).map(|name| (name, data)))
                    .collect();
                let Some(names) = names else {
                    return self.refuse(s, request);
                };
                let fired = self.set_watches(s, *relative_zxid, &names);
                Answered::of(Ok(Reply::WatchesSet { fired }))
            }
            Request::GetAcl { .. } if dir => match &self.dir {
                Some(dir) => Answered {
                    answer: Ok(Reply::Acl {
                        version: dir.version,
                        children: (self.live.len() + self.markers.len()) as i32,
                    }),
                    mzxid: None,
                    acl: Some((dir.acl, dir.czxid)),
                },
                None => Answered::of(Err(Error::NoNode)),
            },
            Request::Recreate { version, .. } if dir => Answered::of(self.recreate(s, *version, acl)),
            _ => self.refuse(s, request),
        }
    }

    /// A `SetWatches` of session `s` relative to `relative_zxid`, on
    /// `names` (each with `true` for a data watch, `false` for an `exists`
    /// watch), as ZooKeeper applies it: first, at once (before its answer,
    /// in the order of the names), the events of what changed since that
    /// zxid: a data-watched node missing fires `NodeDeleted`, one written
    /// after it (its mzxid larger) `NodeDataChanged`, an exist-watched node
    /// that exists `NodeCreated`; every other name gets a watch, a data
    /// watch or an `exists` watch as `getData` and `exists` leave them. A
    /// node this session may not read gets neither an event nor a watch
    /// (the server sends no event of it, now or later); the answer says
    /// nothing of it either.
    fn set_watches(&mut self, s: usize, relative_zxid: i64, names: &[(&str, bool)]) -> Vec<bool> {
        let mut fired = Vec::new();
        let mut at_once = Vec::new();
        for &(name, data) in names {
            let node = self.node(name);
            if node.is_some_and(|node| self.read_denied(s, node)) {
                // The client's own node, on a connection where its handle
                // read it: READ was taken away since, and nothing told it.
                let c = self.sessions[s].contender;
                let mine = node.is_some_and(|n| n.denied == Some(c));
                note!(self, "s{s}'s watch on {name} is silent: it may not read it");
                if mine && self.sessions[s].read_own == Some(self.sessions[s].connection) {
                    self.silenced.insert((s, name.to_owned()));
                }
                at_once.push(false);
                continue;
            }
            let exists = node.is_some() || self.markers.contains(name);
            let kind = match (data, node) {
                (true, None) if !exists => Some(WatchedKind::Deleted),
                (true, Some(node)) if node.mzxid as i64 > relative_zxid => Some(WatchedKind::DataChanged),
                (true, _) => None,
                (false, _) if exists => Some(WatchedKind::Created),
                (false, _) => None,
            };
            at_once.push(kind.is_some());
            match kind {
                Some(kind) => fired.push((name.to_owned(), kind)),
                None => {
                    self.watches.entry(name.to_owned()).or_default().insert(s);
                }
            }
        }
        self.stats.set_watches_fired += fired.len() as u64;
        for (name, kind) in fired {
            let msg = self.watch_msg(&name, kind, SessionState::Connected);
            self.push(s, msg);
        }
        // The answer says which fired before it (as the client sees: their
        // events are in their watchers when the answer comes).
        at_once
    }

    /// An ephemeral sequential create of `<prefix><seq>`.
    fn create(&mut self, s: usize, prefix: &str, data: &[u8]) -> Result<Reply, Error> {
        let Some(dir) = self.dir.as_ref() else {
            return Err(Error::NoNode);
        };
        let seq = if self.negative_once && dir.cversion == i32::MAX {
            self.negative_once = false;
            i32::MIN
        } else {
            dir.cversion
        };
        let name = format!("{prefix}{seq:010}");
        if self.live(&name) {
            return Err(Error::NodeExists);
        }
        self.zxid += 1;
        let czxid = self.add_node_now(name, Some(s), seq, data.to_vec());
        Ok(Reply::Created {
            czxid: czxid as i64,
            seq: i64::from(seq),
        })
    }

    /// The directory's create (with `DIR_ACL`).
    fn create_dir(&mut self, container: bool) -> Result<Reply, Error> {
        if !self.parents {
            Err(Error::NoNode)
        } else if self.dir.is_some() {
            Err(Error::NodeExists)
        } else if container && !self.containers {
            self.stats.no_containers += 1;
            Err(Error::Unimplemented)
        } else {
            self.zxid += 1;
            self.dir = Some(Dir {
                acl: DIR_ACL,
                container,
                cversion: 0,
                data: String::new(),
                version: 0,
                czxid: self.zxid,
                pzxid: self.zxid,
            });
            self.dir_acls.insert(self.zxid, DIR_ACL);
            self.dir_history.push((self.zxid, true));
            self.stats.dirs_made += 1;
            Ok(Reply::Done)
        }
    }

    /// The recycle: one transaction that deletes the directory at
    /// `version` and creates it again, persistent, with `acl` as the
    /// carrier kept it from the `GetAcl` before (the default if none).
    fn recreate(&mut self, s: usize, version: i32, acl: Option<(u32, u64)>) -> Result<Reply, Error> {
        let Some(dir) = &self.dir else {
            return Err(Error::NoNode);
        };
        if !version_matches(Some(version), dir.version) {
            return Err(Error::BadVersion);
        }
        if !self.empty() {
            self.stats.recycles_refused += 1;
            return Err(Error::NotEmpty);
        }
        // A directory made again since the ACL was read, at the version
        // read, is recycled too, with the ACL read from the one before (the
        // server removed that one once empty).
        let (acl, read) = acl.unzip();
        let read_acl = self.dir_acls.get(&read.unwrap_or(dir.czxid)).copied();
        let acl = acl.unwrap_or(DEFAULT_ACL);
        if Some(acl) != read_acl {
            self.broken = Some(format!(
                "s{s} recycled the directory with ACL {acl}, not the one it read ({read_acl:?})"
            ));
        } else if acl != dir.acl {
            self.stats.recycles_raced += 1;
            note!(
                self,
                "s{s} recycles a directory made since its ACL was read: ACL {} becomes {acl}",
                dir.acl
            );
        }
        self.zxid += 1;
        // The directory deleted: its child watches fire `NodeDeleted`. The
        // one made in its place has none.
        self.fire_children(WatchedKind::Deleted);
        self.dir = Some(Dir {
            acl,
            container: false,
            cversion: 0,
            data: String::new(),
            version: 0,
            czxid: self.zxid,
            pzxid: self.zxid,
        });
        self.dir_acls.insert(self.zxid, acl);
        self.dir_history.push((self.zxid, true));
        self.stats.recycles += 1;
        Ok(Reply::Done)
    }

    /// A transaction of the machine's operations: all of them, in order, or
    /// none, refused at the first that fails. What it is, the checks learn
    /// from its operations: one that writes the release record to the
    /// directory and deletes a node is a release with the record; one that
    /// creates a contender node (a reader with a writer's sequence) and
    /// deletes that writer is a downgrade.
    fn multi(&mut self, s: usize, ops: &[contender::Op]) -> Result<Reply, Error> {
        use contender::Op as TxOp;
        // The nodes the operations before make (true) or delete (false).
        let mut made: BTreeMap<&str, bool> = BTreeMap::new();
        for (index, op) in ops.iter().enumerate() {
            let refused = |error| {
                Err(Error::Refused {
                    index,
                    error: Box::new(error),
                })
            };
            let (path, version) = match op {
                TxOp::Check { path, version } | TxOp::Delete { path, version } => (path, *version),
                TxOp::Create { path, .. } => (path, None),
                TxOp::SetData { path, version, .. } => (path, *version),
            };
            if let Some((_, _)) = self.data.get(path.as_str()) {
                // A data node outside the lock directory: only a holder's
                // write (any version) goes there.
                let TxOp::SetData { .. } = op else {
                    return refused(Error::Failed);
                };
                continue;
            }
            if path == DIR {
                // Only the record's write goes to the directory.
                let TxOp::SetData { .. } = op else {
                    return refused(Error::Failed);
                };
                let Some(dir) = &self.dir else {
                    return refused(Error::NoNode);
                };
                if self.write_denied(s) {
                    // The transaction's first operation is refused: nothing is applied.
                    self.stats.refused_records += 1;
                    return refused(Error::NoAuth);
                }
                if !version_matches(version, dir.version) {
                    return refused(Error::BadVersion);
                }
                continue;
            }
            let Some(name) = child_of(path) else {
                return refused(Error::NoNode);
            };
            let exists = made
                .get(name)
                .copied()
                .unwrap_or_else(|| self.live(name) || self.markers.contains(name));
            match op {
                TxOp::Create { .. } if self.dir.is_none() => return refused(Error::NoNode),
                TxOp::Create { .. } if exists => {
                    if is_marker(name) {
                        self.stats.marker_refused += 1;
                    }
                    return refused(Error::NodeExists);
                }
                TxOp::Create { .. } => {
                    made.insert(name, true);
                }
                _ if !exists => return refused(Error::NoNode),
                // A check needs READ on its node.
                TxOp::Check { .. } if self.node(name).is_some_and(|n| self.read_denied(s, n)) => {
                    return refused(Error::NoAuth)
                }
                _ => {
                    let current = self.node(name).map_or(0, |n| n.version);
                    if !made.contains_key(name) && !version_matches(version, current) {
                        return refused(Error::BadVersion);
                    }
                    if let TxOp::Delete { .. } = op {
                        made.insert(name, false);
                    }
                }
            }
        }
        // Applied, all in one transaction.
        self.zxid += 1;
        let record = ops
            .iter()
            .any(|op| matches!(op, TxOp::SetData { path, .. } if path == DIR));
        // A contender node made: a downgrade's reader, with its writer's sequence.
        let reader_seq = ops.iter().find_map(|op| match op {
            TxOp::Create { path, .. } => child_of(path)
                .filter(|name| !is_marker(name))
                .and_then(|name| name.parse::<NodeName>().ok())
                .map(|name| name.seq()),
            _ => None,
        });
        if let Some(reader) = reader_seq {
            self.check_downgrade(s, ops, reader);
        }
        if is_tx(ops) {
            self.check_commit(s, ops);
        }
        let mut results = Vec::with_capacity(ops.len());
        for op in ops {
            let mut result = None;
            match op {
                TxOp::Check { .. } => {}
                TxOp::SetData { path, data, .. } if path == DIR => {
                    self.set_dir_data(String::from_utf8_lossy(data).into_owned())
                }
                TxOp::SetData { path, data, .. } if self.data.contains_key(path.as_str()) => {
                    self.data.insert(path.clone(), (data.clone(), self.zxid));
                }
                TxOp::SetData { path, data, .. } => {
                    let name = child_of(path).unwrap_or_default().to_owned();
                    self.write_node(&name, data.clone());
                }
                TxOp::Create { path, data } => {
                    let name = child_of(path).unwrap_or_default().to_owned();
                    if is_marker(&name) {
                        // Made and deleted again in this transaction: its
                        // `exists` watches fire, before the node's deletion.
                        // It has the contender nodes' ACL: a session that
                        // may not read it is not told (the server checks
                        // READ as it sends a watch's event).
                        self.markers.insert(name.clone());
                        let creator = self.sessions[s].contender;
                        let private = (self.private & (1 << creator) != 0).then_some(creator);
                        self.fire_readable(&name, WatchedKind::Created, private);
                        // A child made: the directory's child watches fire
                        // now, before the node's deletion later in the
                        // transaction.
                        self.children_changed();
                    } else {
                        let seq = reader_seq.unwrap_or_default();
                        let czxid = self.add_node_now(name, Some(s), seq, data.clone());
                        if self.stat_left_out {
                            self.stats.stats_left_out += 1;
                        } else {
                            result = Some(self.stat(&self.nodes[&czxid]));
                        }
                    }
                }
                TxOp::Delete { path, .. } => {
                    let name = child_of(path).unwrap_or_default().to_owned();
                    if is_marker(&name) {
                        self.markers.remove(&name);
                        self.fire(&name, WatchedKind::Deleted);
                        self.children_changed();
                    } else {
                        let seq = self.node(&name).map(|n| n.seq);
                        let by = match reader_seq {
                            Some(reader) if seq == Some(reader) => By::Downgrade { s },
                            Some(_) => By::Session { s, record: false },
                            None => By::Session { s, record },
                        };
                        self.remove_node(&name, by);
                    }
                }
            }
            results.push(result);
        }
        if reader_seq.is_some() {
            self.stats.downgrades += 1;
            self.stats.downgrades_checked += u64::from(ops.iter().any(|op| matches!(op, TxOp::Check { .. })));
        }
        let results = ops
            .iter()
            .zip(results)
            .map(|(op, stat)| match op {
                TxOp::Check { .. } => Done::Check,
                TxOp::Create { .. } => Done::Created(stat),
                TxOp::Delete { .. } => Done::Deleted,
                TxOp::SetData { .. } => Done::Written,
            })
            .collect();
        Ok(Reply::Multi(results))
    }

    /// The rule a downgrade's transaction keeps, checked as it is applied:
    /// never in place of a writer node with a writer queued right behind it
    /// (but the downgrade's own node), which may take the writer node's
    /// deletion for its grant (see `ordering::downgrade`).
    fn check_downgrade(&mut self, s: usize, ops: &[contender::Op], reader: i32) {
        let mut writer = None;
        let mut mine = None;
        for op in ops {
            if let contender::Op::Delete { path, .. } = op {
                let name = child_of(path).unwrap_or_default();
                if let Some(node) = self.node(name) {
                    if node.seq == reader {
                        writer = Some(name.to_owned());
                    } else {
                        mine = Some(name.to_owned());
                    }
                }
            }
        }
        let (Some(writer), Some(mine)) = (writer, mine) else {
            return;
        };
        let children = self.children();
        if let Ok(ordering::Downgrade::Keep) = ordering::downgrade(&writer, &mine, &children) {
            self.broken = Some(format!(
                "s{s}'s downgrade replaces {writer} with a writer queued right behind it: {children:?}"
            ));
        }
    }

    /// Sends `op` for contender `c` (as `owner`'s).
    fn send(&mut self, c: usize, op: Op, owner: Owner) {
        let id = self.next_id;
        self.next_id += 1;
        let s = self.contenders[c].session;
        self.contenders[c].pending.insert(id, (owner, op.clone()));
        if self.sessions[s].state == Link::Expired {
            self.push(
                s,
                Msg::Reply {
                    id,
                    answered: Answered::of(Err(Error::SessionEnded)),
                },
            );
        } else {
            self.sessions[s].inflight.push_back((id, op));
        }
    }

    /// The server applies the next request of session `s`.
    fn apply_next(&mut self, s: usize) {
        if let Some((id, op)) = self.sessions[s].inflight.pop_front() {
            note!(self, "apply s{s} #{id} {}", op.shown());
            self.apply(s, id, op);
        }
    }

    /// The connection of session `s` is lost; the first `applied` requests
    /// in flight reach the server (random if `None`).
    fn disconnect(&mut self, s: usize, applied: Option<usize>) {
        self.stats.disconnects += 1;
        let inflight: Vec<(u64, Op)> = self.sessions[s].inflight.drain(..).collect();
        let cut = applied.unwrap_or_else(|| self.rng.index(inflight.len() + 1));
        note!(
            self,
            "disconnect s{s} ({cut} of {} in flight applied)",
            inflight.len()
        );
        let mut lost = Vec::new();
        for (i, (id, op)) in inflight.into_iter().enumerate() {
            if i < cut {
                self.apply(s, id, op);
            } else {
                lost.push(id);
            }
        }
        let outbound = std::mem::take(&mut self.sessions[s].outbound);
        let mut ids: Vec<u64> = outbound
            .iter()
            .filter_map(|(_, m)| match m {
                Msg::Reply { id, .. } => Some(*id),
                _ => None,
            })
            .collect();
        ids.extend(lost);
        for watchers in self.watches.values_mut() {
            watchers.remove(&s);
        }
        self.child_watches.remove(&s);
        // The removals waiting for watching requests go with the
        // connection, as the client drops them.
        self.sessions[s].deferred.clear();
        self.sessions[s].state = Link::Disconnected;
        self.push(s, Msg::State(SessionState::Disconnected));
        for id in ids {
            let answered = Answered::of(Err(Error::Unanswered));
            self.push(s, Msg::Reply { id, answered });
        }
    }

    /// What a reconnection of session `s` does with a watch its client
    /// keeps: `None`, nothing (a node it may not read: silent, as ever);
    /// `Some(Some(kind))`, it fires at once; `Some(None)`, it is set again.
    fn rearm(&self, s: usize, kept: &Kept) -> Option<Option<WatchedKind>> {
        let last = self.sessions[s].last_zxid;
        if kept.rearm == Rearm::Children {
            // Every session may read the directory.
            return Some(match &self.dir {
                None => Some(WatchedKind::Deleted),
                Some(dir) if dir.pzxid > last => Some(WatchedKind::ChildrenChanged),
                Some(_) => None,
            });
        }
        let node = self.node(&kept.name);
        if node.is_some_and(|node| self.read_denied(s, node)) {
            return None;
        }
        Some(match (kept.rearm, node.map(|n| n.mzxid)) {
            // A data watch.
            (Rearm::Read(mzxid), Some(now)) if now == mzxid => None,
            (Rearm::Relative, Some(now)) if now <= last => None,
            (Rearm::Read(_) | Rearm::Relative, Some(_)) => Some(WatchedKind::DataChanged),
            (Rearm::Read(_) | Rearm::Relative, None) => Some(WatchedKind::Deleted),
            // An `exists` watch: a marker made meanwhile fires `NodeCreated`.
            (Rearm::Exist, _) if self.markers.contains(&kept.name) => Some(WatchedKind::Created),
            (Rearm::Exist | Rearm::Children, _) => None,
        })
    }

    fn reconnect(&mut self, s: usize, order: Order) {
        self.sessions[s].state = Link::Connected;
        self.sessions[s].connection += 1;
        self.push(s, Msg::State(SessionState::Connected));
        let mut fired = Vec::new();
        for kept in self.sessions[s].registry.clone() {
            match self.rearm(s, &kept) {
                // Set again after READ was taken: silent. A guard that
                // keeps it (its own, or the wait's it takes over) is deaf.
                None => {
                    self.deaf.insert((s, kept.name));
                }
                Some(Some(kind)) => fired.push((kept.name, kind)),
                Some(None) if kept.rearm == Rearm::Children => {
                    self.child_watches.insert(s);
                }
                Some(None) => {
                    self.watches.entry(kept.name).or_default().insert(s);
                }
            }
        }
        match order {
            Order::Random => {
                for i in (1..fired.len()).rev() {
                    let j = self.rng.index(i + 1);
                    fired.swap(i, j);
                }
            }
            Order::OwnLast => {
                let own = self.contenders[self.sessions[s].contender]
                    .acq
                    .as_ref()
                    .and_then(|a| a.machine.inner.node().map(str::to_owned));
                fired.sort_by_key(|(name, _)| Some(name) == own.as_ref());
            }
        }
        note!(self, "reconnect s{s}, firing {fired:?}");
        for (name, kind) in fired {
            let msg = self.watch_msg(&name, kind, SessionState::Connected);
            self.push(s, msg);
        }
    }

    fn expire(&mut self, s: usize) {
        self.stats.expiries += 1;
        if self.sessions[s].state == Link::Connected {
            self.disconnect(s, None);
        }
        note!(self, "expire s{s}");
        let queued: Vec<u64> = self.sessions[s].inflight.drain(..).map(|(id, _)| id).collect();
        self.sessions[s].state = Link::Expired;
        self.zxid += 1;
        let owned: Vec<String> = self
            .live
            .iter()
            .filter(|(_, czxid)| self.nodes[czxid].owner == Some(s))
            .map(|(name, _)| name.clone())
            .collect();
        for name in owned {
            self.remove_node(&name, By::Expiry);
        }
        for watchers in self.watches.values_mut() {
            watchers.remove(&s);
        }
        self.child_watches.remove(&s);
        self.push(s, Msg::State(SessionState::Expired));
        // Some data watches hear of the end too.
        let mut told = Vec::new();
        for kept in std::mem::take(&mut self.sessions[s].registry) {
            if (kept.rearm.data() || kept.rearm == Rearm::Children) && self.rng.one_in(2) {
                let msg = self.watch_msg(&kept.name, WatchedKind::Session, SessionState::Expired);
                self.push(s, msg);
                told.push(kept);
            }
        }
        self.sessions[s].registry = told;
        for id in queued {
            let answered = Answered::of(Err(Error::SessionEnded));
            self.push(s, Msg::Reply { id, answered });
        }
    }

    /// A stranger writes to a contender node: sometimes a revocation request.
    fn foreign_data(&mut self, name: &str) {
        self.stats.foreign += 1;
        let revoke = self.rng.one_in(2);
        note!(
            self,
            "stranger writes {} to {name}",
            if revoke { "a revocation request" } else { "data" }
        );
        self.zxid += 1;
        let data = if revoke {
            REVOKE_PAYLOAD
        } else {
            b"junk".as_slice()
        };
        self.write_node(name, data.to_vec());
    }

    /// An observer of the election looks at the lock directory (at the
    /// current zxid: one server) and names the head writer as leader only
    /// if its node carries the announcement of the identity in its name
    /// (`ordering::leader`, `rules::announces`). Checked: the contender
    /// that owns the node was told of its grant (its machine answered
    /// `Grant`, and it has not begun its release), and terms never go back.
    fn observe(&mut self) -> Check {
        let children = self.children();
        let Some(head) = leader(&children).map(str::to_owned) else {
            return Ok(());
        };
        let Some(node) = self.node(&head) else {
            return Ok(());
        };
        let (owner, czxid) = (node.owner, node.czxid);
        if !announces(&head, &node.data) && self.mutation != Mutation::ObserverNamesHead {
            return Ok(());
        }
        self.stats.leaders_named += 1;
        let told = owner.is_some_and(|s| {
            let k = &self.contenders[self.sessions[s].contender];
            let held = |acq: &Acq| acq.machine.inner.node() == Some(head.as_str()) && acq.granted;
            k.session == s
                && (k
                    .acq
                    .as_ref()
                    .is_some_and(|a| held(a) && matches!(k.state, CState::Holding | CState::Releasing))
                    || k.writer.as_ref().is_some_and(held))
        });
        if !told {
            return self.fail(format!(
                "an observer names {head} leader, whose campaign was not granted (owner {owner:?})"
            ));
        }
        if let Some((last, term)) = &self.observed {
            if czxid < *term {
                return self.fail(format!(
                    "an observer names {head} (term {czxid}) after {last} (term {term})"
                ));
            }
            self.stats.leader_changes += u64::from(*last != head);
        }
        self.observed = Some((head, czxid));
        Ok(())
    }

    fn foreign_record(&mut self, data: String) {
        self.stats.foreign += 1;
        note!(self, "stranger writes {data:?} to the directory");
        self.zxid += 1;
        self.set_dir_data(data);
    }

    fn foreign_delete(&mut self, name: &str) {
        self.stats.foreign += 1;
        note!(self, "stranger deletes {name}");
        self.zxid += 1;
        self.remove_node(name, By::Stranger);
    }

    /// A stranger deletes a contender node and makes one of its own under
    /// the same name (persistent, with the name's token).
    fn foreign_replace(&mut self, name: &str) {
        let Some(seq) = self.node(name).map(|n| n.seq) else {
            return;
        };
        self.foreign_delete(name);
        note!(self, "stranger makes {name} again");
        self.add_node(name.to_owned(), None, seq);
    }

    /// A stranger makes a node named as the release marker of `name`, a
    /// node no contender waits on (making it while one watches for it
    /// forges a release, as writing a live node's name into the directory's
    /// data does: excluded). A release of `name` is then refused whole.
    fn foreign_marker(&mut self, name: &str) {
        self.stats.foreign += 1;
        self.stats.foreign_markers += 1;
        let marker = release_marker(name);
        note!(self, "stranger makes {marker}");
        self.zxid += 1;
        self.fire(&marker, WatchedKind::Created);
        self.marker_spans.push((marker.clone(), self.zxid, None));
        self.markers.insert(marker);
        self.children_changed();
    }

    /// A stranger makes a node of its own in a semaphore's directory (see
    /// `Move::ForeignNode`), persistent: a sequential create for a
    /// contender's name, a plain one for a foreign name.
    fn foreign_node(&mut self, kind: u8) {
        let Some(seq) = self.dir.as_ref().map(|dir| dir.cversion) else {
            return;
        };
        let other = self.permits.map_or(1, NonZeroU32::get) % 4 + 1;
        let (name, seq) = match kind {
            0 => (format!("stranger-W-{seq:010}"), seq),
            1 => {
                let token = Uuid::from_u128(u128::from(self.zxid));
                let permits = NonZeroU32::new(other).expect("not 0");
                (
                    format!("{}{seq:010}", semaphore::prefix("stranger", token, permits)),
                    seq,
                )
            }
            _ => (format!("config-{}.json", self.zxid), -1),
        };
        if self.live(&name) {
            return;
        }
        self.stats.foreign += 1;
        self.stats.foreign_nodes += 1;
        note!(self, "stranger makes {name}");
        self.add_node(name, None, seq);
    }

    /// A stranger deletes a marker it made.
    fn foreign_unmarker(&mut self, marker: &str) {
        self.stats.foreign += 1;
        note!(self, "stranger deletes {marker}");
        self.zxid += 1;
        self.markers.remove(marker);
        let zxid = self.zxid;
        for (name, _, gone) in &mut self.marker_spans {
            if name == marker && gone.is_none() {
                *gone = Some(zxid);
            }
        }
        self.fire(marker, WatchedKind::Deleted);
        self.children_changed();
    }

    /// The nodes a stranger may name a marker after: live ones no
    /// contender waits on, whose marker nobody watches.
    fn marker_candidates(&self) -> Vec<String> {
        let mut candidates = self.replace_candidates();
        candidates.retain(|name| {
            let marker = release_marker(name);
            !self.markers.contains(&marker) && self.watches.get(&marker).is_none_or(BTreeSet::is_empty)
        });
        candidates
    }

    /// The nodes some contender waits on. A semaphore's wait keeps its
    /// watches while it lists again (`wire::Exchange::kept`), and their
    /// events reach it: it waits on every node its client keeps a watch on
    /// for it.
    fn watched_nodes(&self) -> BTreeSet<&String> {
        let kept = self
            .contenders
            .iter()
            .filter(|_| self.permits.is_some())
            .flat_map(|k| &self.sessions[k.session].registry)
            .filter(|kept| kept.whose == Watch::Watched && !kept.detached)
            .map(|kept| &kept.name);
        self.contenders
            .iter()
            .filter_map(|c| c.acq.as_ref())
            .flat_map(|a| &a.watching)
            .chain(kept)
            .collect()
    }

    /// The server removes the empty container directory.
    fn remove_dir(&mut self) {
        note!(self, "the server removes the empty directory");
        self.zxid += 1;
        self.dir = None;
        self.fire_children(WatchedKind::Deleted);
        self.dir_history.push((self.zxid, true));
        self.dir_removals += 1;
        self.stats.dirs_removed += 1;
    }

    /// What a stranger may write to the directory's data without forging a
    /// release: garbage, or the name of a node that is gone and that no
    /// contender waits on.
    fn record_candidates(&self) -> Vec<String> {
        if self.dir.is_none() {
            return Vec::new();
        }
        let watched = self.watched_nodes();
        let mut out = vec!["garbage".to_owned(), String::new()];
        out.extend(
            self.nodes
                .values()
                .filter(|n| n.dzxid.is_some() && !self.live(&n.name) && !watched.contains(&n.name))
                .map(|n| n.name.clone())
                .take(6),
        );
        out
    }

    /// The nodes a stranger may delete and make again: those no contender
    /// waits on (making one again after its deletion granted the waiter
    /// puts a contender back ahead of a holder, as a forged release would).
    fn replace_candidates(&self) -> Vec<String> {
        let watched = self.watched_nodes();
        self.live
            .keys()
            .filter(|name| !watched.contains(name))
            .cloned()
            .collect()
    }

    // ---- the contenders ----

    fn acq(&mut self, c: usize) -> &mut Acq {
        self.contenders[c].acq.as_mut().expect("an acquire")
    }

    fn machine(&self, c: usize) -> &contender::Contender {
        &self.contenders[c].acq.as_ref().expect("an acquire").machine.inner
    }

    fn start(&mut self, c: usize, mode: Mode, may_wait: bool, has_deadline: bool) -> Check {
        if self.sessions[self.contenders[c].session].state == Link::Expired {
            self.contenders[c].session = self.new_session(c);
            // The requests of the session that expired are answered no more.
            self.contenders[c].pending.clear();
            self.contenders[c].txs.clear();
            // A new session is a new handle: it learns again.
            self.contenders[c].own_readable = None;
        }
        let (zxid, removals, mutation) = (self.zxid, self.dir_removals, self.mutation);
        let connection = self.sessions[self.contenders[c].session].connection;
        // A downgrade's reader, while the writer waits in `writer`.
        let replacing = self.contenders[c]
            .writer
            .as_ref()
            .and_then(|w| w.machine.inner.node().map(str::to_owned));
        let layout = if self.mixed && replacing.is_none() {
            layout_of(c, mode)
        } else {
            Layout::Native
        };
        let check_data = self.check_data && !self.contenders[c].data_checked && replacing.is_none();
        // The version before the release marker never watches one (it
        // reads the release record after every deletion, as a lock built
        // without release markers does).
        let markers = self.old & (1 << c) == 0;
        let contender = &mut self.contenders[c];
        contender.acquires += 1;
        // Unique per contender and acquire; the identity keeps traces readable.
        let token = Uuid::from_u128(((c as u128) << 64) | u128::from(contender.acquires));
        let identity = format!("c{c}");
        let session = session_id(contender.session);
        let inner = contender::Contender::new(mode, may_wait, layout, token, session, check_data)
            .with_release_markers(markers)
            .with_own_readable(contender.own_readable == Some(self.sessions[contender.session].connection))
            .with_listing_limit(self.listing_limit)
            .with_place(true)
            .with_permits(self.permits);
        // A semaphore's name carries its permit count (`semaphore::prefix`).
        let prefix = inner.prefix(&identity).expect("a mode the layout has");
        let wire = Wire::new(DIR, &prefix, node_data(layout, &identity));
        let mark = contender.writer.as_ref().is_some_and(|w| w.mark);
        let revoked = contender
            .writer
            .as_ref()
            .is_some_and(|w| w.machine.inner.is_revoked());
        let inner = match &replacing {
            Some(writer) => inner.replacing(writer, mark, revoked),
            None => inner,
        };
        contender.state = CState::Acquiring;
        contender.acq = Some(Acq {
            mode,
            may_wait,
            has_deadline,
            deadline_fired: false,
            layout,
            token,
            check_data,
            started: zxid,
            removals,
            machine: Machine::new(inner, mode, session, mutation),
            wire,
            exchange: None,
            keeping: None,
            create_exists: false,
            taken: None,
            waiting: false,
            watching: BTreeSet::new(),
            handles: BTreeMap::new(),
            states: None,
            run: wire::Run::new(contender::Deadlines::forever(), connection),
            polls: None,
            waited: false,
            last: "created",
            mark: false,
            keeper: None,
            refused: false,
            released_live: false,
            acl: None,
            outcome: None,
            downgrade: replacing.is_some(),
            replace_reader: None,
            granted: false,
            listing: None,
            own_told: None,
            unanswered: 0,
            blind: false,
            read_watched: 0,
        });
        let s = self.contenders[c].session;
        note!(
            self,
            "c{c} (s{s}) starts {mode}{}{}{}",
            if may_wait { "" } else { " (try)" },
            if has_deadline { " with a deadline" } else { "" },
            if check_data {
                ", checking the directory's data"
            } else {
                ""
            }
        );
        let action = self.acq(c).machine.start();
        self.act(c, action)
    }

    /// The holding writer downgrades: its acquire waits in `writer`, and a
    /// reader's acquire (the downgrade's) starts.
    fn downgrade(&mut self, c: usize) -> Check {
        let contender = &mut self.contenders[c];
        let mut writer = contender.acq.take().expect("a holder");
        if writer.machine.inner.begin_replace().is_err() {
            return self.fail(format!("c{c} cannot begin the downgrade of a held writer"));
        }
        if let Some((_, downgrading)) = writer.keeping.as_mut() {
            *downgrading = true;
        }
        note!(self, "c{c} downgrades {:?}", writer.machine.inner.node());
        self.contenders[c].writer = Some(writer);
        self.start(c, Mode::Read, true, false)
    }

    /// The holder releases.
    fn release(&mut self, c: usize) -> Check {
        note!(self, "c{c} releases {:?}", self.machine(c).node());
        self.contenders[c].state = CState::Releasing;
        let live = self.sessions[self.contenders[c].session].state != Link::Expired;
        self.acq(c).released_live = live;
        let action = self.acq(c).machine.release();
        self.act(c, action)
    }

    /// The acquire's deadline passes, during the exchange under way or the
    /// wait's `Wait` (`wire::deadline` says what it does): the answers not
    /// come are not awaited any more.
    fn deadline(&mut self, c: usize) -> Check {
        note!(self, "c{c}: deadline");
        let acq = self.acq(c);
        acq.deadline_fired = true;
        let exchange = acq.exchange.take();
        let action = match (&exchange, std::mem::take(&mut acq.waiting)) {
            (None, true) => acq.machine.deadline(None),
            (Some(carried), false) => acq.machine.deadline(Some(carried.exchange())),
            (exchange, waiting) => {
                let under_way = exchange.is_some();
                return self.fail(format!(
                    "c{c}'s deadline: an exchange under way {under_way}, waiting {waiting}"
                ));
            }
        };
        // The exchange cut short goes with the watches its answers left, as
        // the library's driver drops the exchange it carried: dropped, none
        // left to linger.
        let left: Vec<wire::Watching<String>> = exchange
            .into_iter()
            .flat_map(|carried| carried.carry.finish().kept)
            .map(|kept| wire::Watching {
                lingers: false,
                ..kept.into()
            })
            .collect();
        self.let_go(c, left);
        self.act(c, action)
    }

    fn withdraw(&mut self, c: usize) -> Check {
        self.contenders[c].state = CState::Withdrawing;
        let acq = self.acq(c);
        acq.waiting = false;
        acq.watching.clear();
        acq.exchange = None;
        self.drop_wait_watches(c);
        let acq = self.acq(c);
        let action = acq.machine.withdraw();
        self.act(c, action)
    }

    fn finish(&mut self, c: usize) {
        let contender = &mut self.contenders[c];
        let acq = contender.acq.take().expect("an acquire");
        contender.data_checked |= acq.machine.inner.data_checked();
        let outcome = acq.outcome.expect("an outcome");
        contender.outcomes.push(outcome);
        if let Some(writer) = contender.writer.take() {
            // The downgrade kept the writer node: it holds on, as the read lock.
            contender.acq = Some(writer);
            contender.state = CState::Holding;
            note!(
                self,
                "c{c}'s downgrade done: {outcome:?}; the writer node is kept"
            );
            return;
        }
        contender.state = CState::Idle;
        note!(self, "c{c} done: {outcome:?}");
    }

    fn deliver(&mut self, s: usize) -> Check {
        let Some((zxid, msg)) = self.sessions[s].outbound.pop_front() else {
            return Ok(());
        };
        let c = self.sessions[s].contender;
        // A reply the server sent (not one the client made up when the
        // connection was lost) tells the client the server's zxid.
        if let Msg::Reply { answered, .. } = &msg {
            if answered.answer != Err(Error::Unanswered) {
                let session = &mut self.sessions[s];
                session.last_zxid = session.last_zxid.max(zxid);
            }
        }
        if self.contenders[c].session != s {
            return Ok(());
        }
        self.contenders[c].basis = zxid;
        match msg {
            Msg::Reply { id, answered } => {
                let Some((owner, op)) = self.contenders[c].pending.remove(&id) else {
                    return Ok(());
                };
                if let Op::Wire { request, .. } = &op {
                    let ok = answered.answer.is_ok();
                    self.watch_answered(c, request, ok);
                }
                match (owner, op) {
                    (Owner::Exchange { serial, index }, Op::Wire { request, acl }) => {
                        note!(self, "c{c} <- #{id} {}", shown(&answered.answer));
                        self.answered(c, id, serial, index, request, acl, answered)
                    }
                    (Owner::Tx { serial }, _) => {
                        note!(self, "c{c} <- #{id} (transaction) {}", shown(&answered.answer));
                        self.tx_answered(c, id, serial, answered.answer)
                    }
                    (Owner::Look { serial, index }, _) => {
                        note!(self, "c{c} <- #{id} (look) {}", shown(&answered.answer));
                        self.looked(c, serial, index, answered.answer)
                    }
                    _ => Ok(()),
                }
            }
            Msg::Watch {
                name,
                kind,
                state,
                write,
            } => {
                let registry = &mut self.sessions[s].registry;
                let Some(at) = registry.iter().position(|k| k.name == name) else {
                    // Dropped by the carrier: the client ignores it.
                    return Ok(());
                };
                // A one-shot watch.
                let kept = registry.remove(at);
                if let Some(id) = kept.awaiting {
                    // Its request is not answered yet: the client holds the
                    // event, and the answer hands it over.
                    note!(self, "c{c} holds {kind:?} of {name} for the answer of #{id}");
                    let whose = kept.whose;
                    self.sessions[s].early.push(Early {
                        id,
                        name,
                        whose,
                        kind,
                        state,
                        write,
                    });
                    return Ok(());
                }
                if kept.detached {
                    note!(self, "c{c} ignores {kind:?} of {name}: its watch lingered");
                    self.stats.lingered_events += 1;
                    return Ok(());
                }
                self.on_watch(c, &name, kept.whose, kind, state, write)
            }
            Msg::State(state) => {
                let event = Event::of_session(state);
                note!(self, "c{c} <- {state:?}: {event:?}");
                if event == Event::SessionEnded {
                    if let Some(writer) = self.contenders[c].writer.as_mut() {
                        writer.machine.event(event);
                        writer.machine.inner.held_lost();
                        self.stats.held_lost += 1;
                    }
                    if let CState::Holding | CState::Releasing = self.contenders[c].state {
                        let machine = &mut self.acq(c).machine;
                        machine.event(event);
                        machine.inner.held_lost();
                        self.stats.held_lost += 1;
                        return Ok(());
                    }
                }
                if !matches!(self.contenders[c].state, CState::Acquiring | CState::Withdrawing) {
                    return Ok(());
                }
                if self.contenders[c].state == CState::Acquiring {
                    self.acq(c).states = Some(state);
                } else {
                    self.acq(c).run.arrivals_mut().session(state);
                }
                self.take_arrivals(c)
            }
        }
    }

    /// A watch the carrier kept fired: what it means is the core's
    /// (`NodeEvent::of`), and whose it is the wire said.
    fn on_watch(
        &mut self,
        c: usize,
        name: &str,
        whose: Watch,
        kind: WatchedKind,
        state: SessionState,
        write: Option<u64>,
    ) -> Check {
        let event = NodeEvent::of(kind, state);
        let event_state = state;
        if let Some(writer) = self.contenders[c].writer.as_mut() {
            if whose == Watch::Held && writer.machine.inner.node() == Some(name) {
                note!(self, "c{c}'s downgrading writer's keeper <- {event:?} ({name})");
                let czxid = writer.machine.inner.czxid();
                let report = match writer.keeper.as_mut() {
                    Some(keeping) => writer.machine.held_fired(keeping, kind, state),
                    None => None,
                };
                self.check_keeper_report(c, czxid, report)?;
                self.keep_writer(c);
                return Ok(());
            }
        }
        let state = self.contenders[c].state;
        let Some(acq) = self.contenders[c].acq.as_mut() else {
            return Ok(());
        };
        let mine = acq.machine.inner.node() == Some(name);
        match (whose, state) {
            (Watch::Held, CState::Holding | CState::Releasing) if mine => {
                note!(self, "c{c}'s keeper <- {event:?} ({name})");
                self.keeper_event(c, kind, event_state)
            }
            (Watch::Own | Watch::Marker | Watch::Watched | Watch::Listing, CState::Acquiring) => {
                // No wake-up twice for one write: a watch the wait sets on
                // its node after it was told of a write (`getData`) fires
                // for the next one.
                if let (Watch::Own, true, Some(write)) = (whose, mine, write) {
                    if acq.own_told.is_some_and(|told| write <= told) {
                        return self.fail(format!(
                            "c{c} is told again of the write at {write} to its node {name}"
                        ));
                    }
                    acq.own_told = Some(write);
                }
                // The carrier's watch holds its event until the wait's
                // table asks for it (`wire::Watches::collect`): at once if
                // the wait waits, else as the exchange under way ends. A
                // watch of the client's that the carrier does not hold is a
                // watch it neither kept nor let go of.
                note!(self, "c{c}'s {whose:?} watch <- {event:?} ({name})");
                match acq.handles.get_mut(name) {
                    Some(handle @ Handle::Pending) => *handle = Handle::Fired(kind, event_state),
                    other => {
                        let other = format!("{other:?}");
                        return self.fail(format!(
                            "c{c}'s {whose:?} watch on {name} fired, and its carrier holds no such watch waiting ({other})"
                        ));
                    }
                }
                self.take_arrivals(c)
            }
            _ => Ok(()),
        }
    }

    /// What arrived, taken as the machine takes it, by the carrier's
    /// [`wire::Run`] as the driver takes it: while the machine waits, the
    /// first of all that arrived ([`wire::Run::gather`], then
    /// [`wire::Run::arrived`]); while an exchange of the acquire is under
    /// way, nothing until it ends ([`World::exchange_done`]); while it
    /// withdraws, the session's changes at once.
    fn take_arrivals(&mut self, c: usize) -> Check {
        self.take_arrivals_with(c, wire::Now::quiet(self.session_state(c)), None)
    }

    /// [`World::take_arrivals`], with what the wait found `now` (a poll's end).
    ///
    /// `polled_error`: the error of the look that ended the poll
    /// (`now.polled`), the acquire's last if the wait takes that end, as
    /// the driver keeps it.
    fn take_arrivals_with(&mut self, c: usize, now: wire::Now, polled_error: Option<Error>) -> Check {
        let acquiring = self.contenders[c].state == CState::Acquiring;
        let acq = self.acq(c);
        if !acquiring {
            for event in acq.run.arrivals_mut().while_carrying() {
                self.on_event(c, event)?;
            }
            return Ok(());
        }
        if !acq.waiting {
            return Ok(());
        }
        self.gather(c)?;
        match self.acq(c).run.arrived(now, polled_error.map(Fault::Carrier)) {
            Some(acquire::Input::Event(event)) => self.on_event(c, event),
            Some(input) => self.fail(format!("c{c} took {input:?} from what arrived")),
            None => Ok(()),
        }
    }

    /// The session's state of contender `c`, in the client's terms.
    fn session_state(&self, c: usize) -> SessionState {
        match self.sessions[self.contenders[c].session].state {
            Link::Connected => SessionState::Connected,
            Link::Disconnected => SessionState::Disconnected,
            Link::Expired => SessionState::Expired,
        }
    }

    /// An event for the machine while it acquires (or withdraws).
    fn on_event(&mut self, c: usize, event: Event) -> Check {
        let state = self.contenders[c].state;
        if !matches!(state, CState::Acquiring | CState::Withdrawing) {
            return Ok(());
        }
        self.stats.listing_events += u64::from(matches!(event, Event::Listing(_)));
        let acq = self.acq(c);
        if state == CState::Acquiring && std::mem::take(&mut acq.waiting) {
            let action = acq.machine.step_event(event);
            self.act(c, action)
        } else {
            acq.machine.event(event);
            Ok(())
        }
    }

    /// The held node's watch fired: the keeper tells the machine.
    fn keeper_event(&mut self, c: usize, kind: WatchedKind, state: SessionState) -> Check {
        let holding = self.contenders[c].state == CState::Holding;
        let event = NodeEvent::of(kind, state);
        let acq = self.acq(c);
        let report = match acq.keeper.as_mut() {
            Some(keeping) => acq.machine.held_fired(keeping, kind, state),
            None => None,
        };
        let (czxid, lost) = (acq.machine.inner.czxid(), acq.machine.inner.is_lost());
        if holding && matches!(event, NodeEvent::Deleted | NodeEvent::SessionEnded) {
            self.stats.held_lost += 1;
            if !lost {
                return self.fail(format!(
                    "c{c}'s keeper was told {event:?} of its node, and its machine does not say lost"
                ));
            }
        }
        self.check_keeper_report(c, czxid, report)?;
        self.keep(c);
        Ok(())
    }

    /// What the keeper reports is so: its node (made at `czxid`) deleted
    /// only if it is gone; its node unwatchable only if the node's ACL
    /// denies it READ.
    fn check_keeper_report(&mut self, c: usize, czxid: Option<i64>, report: Option<wire::Report>) -> Check {
        let Some(report) = report else {
            return Ok(());
        };
        let node = czxid.and_then(|z| self.nodes.get(&(z as u64)));
        let deleted = matches!(report.lost, Some(wire::Loss::Deleted | wire::Loss::MadeAgain));
        if deleted && czxid.is_some_and(|z| self.alive(z as u64)) {
            return self.fail(format!(
                "c{c}'s keeper reported its node lost by a deletion ({report:?}), and it is there"
            ));
        }
        if report.unwatchable && node.is_none_or(|n| n.denied != Some(c)) {
            return self.fail(format!(
                "c{c}'s keeper reported its node unwatchable, and its ACL does not deny it READ"
            ));
        }
        Ok(())
    }

    /// What the keeper does next (`wire::Keeping::poll`): it waits on the
    /// watch the carrier keeps, or sends its read and watch of the held
    /// node, at once (no clock runs here: its pause is the library's), or
    /// it stopped.
    fn keep(&mut self, c: usize) {
        let next = self.acq(c).keeper.as_mut().and_then(wire::Keeping::poll);
        if let Some(wire::Keeper::Send { exchange, .. }) = next {
            self.carry_keeper(c, false, exchange);
        }
    }

    /// As [`World::keep`], for a writer whose downgrade is under way (or
    /// was: it may be the holder again).
    fn keep_writer(&mut self, c: usize) {
        let k = &mut self.contenders[c];
        let Some(acq) = k.writer.as_mut().or(k.acq.as_mut()) else {
            return;
        };
        let next = acq.keeper.as_mut().and_then(wire::Keeping::poll);
        if let Some(wire::Keeper::Send { exchange, .. }) = next {
            self.carry_keeper(c, true, exchange);
        }
    }

    /// Sends the keeper's exchange (a downgrading writer's, or the holder's).
    fn carry_keeper(&mut self, c: usize, writer: bool, exchange: Exchange) {
        let serial = self.next_serial();
        let mut carried = Carried::new(serial, exchange);
        let sends: Vec<wire::Send> = std::iter::from_fn(|| carried.carry.poll_send()).collect();
        let k = &mut self.contenders[c];
        let acq = if writer {
            k.writer.as_mut().or(k.acq.as_mut())
        } else {
            k.acq.as_mut()
        };
        if let Some(acq) = acq {
            acq.keeping = Some((carried, writer));
        }
        for send in sends {
            self.send_request(c, serial, send.index, send.request);
        }
    }

    fn next_serial(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id - 1
    }

    /// Sends request `index` of the exchange `serial` as it is; for a
    /// contender of the version before the release marker, shaped as that
    /// version sent it (a model of an older peer's bytes: its release
    /// record's transaction has no marker to create and delete).
    fn send_request(&mut self, c: usize, serial: u64, index: usize, request: Request) {
        let marker = |op: &contender::Op| match op {
            contender::Op::Create { path, .. } | contender::Op::Delete { path, .. } => is_marker(path),
            contender::Op::Check { .. } | contender::Op::SetData { .. } => false,
        };
        let request = match request {
            Request::Multi { mut ops } if self.old & (1 << c) != 0 => {
                ops.retain(|op| !marker(op));
                Request::Multi { ops }
            }
            // A broken wire's bytes.
            Request::SetWatches {
                relative_zxid,
                data,
                exist,
            } if self.mutation == Mutation::LaterRelative => Request::SetWatches {
                relative_zxid: relative_zxid + 1000,
                data,
                exist,
            },
            request => request,
        };
        // The ACL the carrier kept from the `GetAcl` before, for the client's call.
        let acl = match &request {
            Request::Recreate { .. } => self.contenders[c].acq.as_mut().and_then(|a| a.acl.take()),
            _ => None,
        };
        self.send(c, Op::Wire { request, acl }, Owner::Exchange { serial, index });
    }

    /// Carries an action of the machine through the wire: the exchange's
    /// requests are sent as they are, all at once.
    fn carry(&mut self, c: usize, exchange: Exchange) -> Check {
        let serial = self.next_serial();
        let acq = self.acq(c);
        // A new request: no answer of the last was lost for it (the run
        // forgot their errors as it sent it).
        acq.unanswered = 0;
        if let Some(answers) = acq.machine.unasked() {
            // A broken machine takes these answers without asking.
            let mut exchange = exchange;
            for (index, answer) in answers.into_iter().enumerate() {
                exchange.answer(index, answer);
            }
            let action = acq.machine.settle(&mut acq.wire, &exchange);
            return self.act(c, action);
        }
        // As the library's driver sends it (`wire::Run::sending`): one that
        // forgets the session's changes forgets those in the slot, then
        // reads the connection; the watches of the kinds the exchange sets
        // go, but those it keeps.
        let connection = self.sessions[self.contenders[c].session].connection;
        let Acq {
            run,
            machine,
            wire,
            states,
            ..
        } = self.acq(c);
        let changed = || states.take();
        let (exchange, gone) = run.sending(&mut machine.inner, wire, exchange, changed, || connection);
        self.let_go(c, gone);
        let mut carried = Carried::new(serial, exchange);
        if carried.carry.is_complete() {
            // Nothing to send (the wire decided so): settled at once.
            return self.exchange_done(c, carried.carry.finish());
        }
        let sends: Vec<wire::Send> = std::iter::from_fn(|| carried.carry.poll_send()).collect();
        let sends: Vec<(wire::Send, Vec<Watch>)> = sends
            .into_iter()
            .map(|send| {
                let whose = carried.exchange().watch_of(send.index).to_vec();
                (send, whose)
            })
            .collect();
        // The watched node's watch in my node's `SetWatches` (`blind`).
        let blind = sends
            .iter()
            .any(|(send, _)| matches!(&send.request, Request::SetWatches { data, .. } if data.len() == 2));
        if blind {
            self.stats.blind += 1;
            let watched = self.acq(c).watching.first().cloned().unwrap_or_default();
            let s = self.contenders[c].session;
            let silent = self.node(&watched).is_some_and(|node| self.read_denied(s, node));
            self.stats.blind_silent += u64::from(silent);
            self.acq(c).blind = true;
        }
        self.acq(c).exchange = Some(carried);
        for (send, whose) in sends {
            // The id `send` gives it.
            let id = self.next_id;
            self.preregister(c, id, &send.request, &whose);
            self.send_request(c, serial, send.index, send.request);
        }
        Ok(())
    }

    /// The wait asks its table of watches and the session's slot what they
    /// gave ([`wire::Run::gather`]), as the driver's wait does.
    fn gather(&mut self, c: usize) -> Check {
        let Acq {
            run, handles, states, ..
        } = self.acq(c);
        let mut again = None;
        run.gather(ask(handles, &mut again), || states.take());
        self.asked_again(c, again)
    }

    /// A check: the carrier's table asked no watch again after it gave its
    /// event (`again`, from [`ask`]).
    fn asked_again(&mut self, c: usize, again: Option<String>) -> Check {
        match again {
            Some(name) => self.fail(format!(
                "c{c}'s carrier asked its watch on {name} again after it gave its event"
            )),
            None => Ok(()),
        }
    }

    /// The client registers a watch of contender `c` on `name`, `whose` it
    /// is: a wait's is the carrier's from now on, not fired yet (one it had
    /// on that node before is replaced: its event is not this one's).
    fn hold(&mut self, c: usize, name: &str, whose: Watch) {
        if let Some(acq) = self.contenders[c].acq.as_mut() {
            match whose {
                Watch::Own | Watch::Marker | Watch::Watched | Watch::Listing => {
                    acq.handles.insert(name.to_owned(), Handle::Pending);
                }
                Watch::Held => {
                    acq.handles.remove(name);
                }
            }
        }
    }

    /// The carrier lets go of watches its table no longer holds
    /// ([`wire::Watches::replace`], `drop_marker`, `drain`), as the library's
    /// driver does: one that lingers ([`wire::Exchange::lingers`]) the client
    /// keeps, detached (left to fire, its event ignored); any other it
    /// drops, and asks the server to remove it unless it keeps another watch
    /// on that node. One that fired is gone already, and its event with it.
    /// Returns how many removals were sent.
    fn let_go(&mut self, c: usize, gone: Vec<wire::Watching<String>>) -> usize {
        let s = self.contenders[c].session;
        let mut removals = 0;
        for watching in gone {
            let name = watching.watch;
            if let Some(acq) = self.contenders[c].acq.as_mut() {
                acq.handles.remove(&name);
            }
            let registry = &mut self.sessions[s].registry;
            let held = |k: &Kept| k.name == name && k.whose == watching.kind && !k.detached;
            let Some(at) = registry.iter().position(held) else {
                continue;
            };
            if watching.lingers {
                registry[at].detached = true;
                continue;
            }
            registry.remove(at);
            note!(self, "c{c} drops its {:?} watch on {name}", watching.kind);
            if !self.sessions[s].registry.iter().any(|k| k.name == name) {
                self.send_unwatch(c, name);
                removals += 1;
            }
        }
        removals
    }

    /// The wait is over (a grant, a failure, a withdrawal): as the
    /// library's driver drops its table of watches, the carrier lets go of
    /// every watch left in it (a grant took my node's first), and what
    /// arrived and was not taken goes.
    fn drop_wait_watches(&mut self, c: usize) {
        let Some(acq) = self.contenders[c].acq.as_mut() else {
            return;
        };
        *acq.run.arrivals_mut() = wire::Arrivals::default();
        let gone = acq.run.watches_mut().drain();
        acq.handles.clear();
        acq.states = None;
        if !gone.is_empty() {
            note!(self, "c{c}'s wait is over: it lets go of its watches");
        }
        self.let_go(c, gone);
    }

    /// Where the exchange `serial` of contender `c` is, if one awaits it.
    fn slot(&self, c: usize, serial: u64) -> Option<Slot> {
        let k = &self.contenders[c];
        let keeping = |acq: &Acq| acq.keeping.as_ref().is_some_and(|(e, _)| e.serial == serial);
        match (k.acq.as_ref(), k.writer.as_ref()) {
            (Some(acq), _) if acq.exchange.as_ref().is_some_and(|e| e.serial == serial) => {
                Some(Slot::Acquire)
            }
            (Some(acq), _) if keeping(acq) => Some(Slot::Keeper),
            (_, Some(writer)) if keeping(writer) => Some(Slot::WriterKeeper),
            _ => None,
        }
    }

    fn carry_mut(&mut self, c: usize, slot: Slot) -> &mut Carry<String, Error> {
        let k = &mut self.contenders[c];
        let carried = match slot {
            Slot::Acquire => k.acq.as_mut().and_then(|a| a.exchange.as_mut()),
            Slot::Keeper => k.acq.as_mut().and_then(|a| a.keeping.as_mut()).map(|(e, _)| e),
            Slot::WriterKeeper => k.writer.as_mut().and_then(|a| a.keeping.as_mut()).map(|(e, _)| e),
        };
        &mut carried.expect("the exchange of its slot").carry
    }

    /// The answer to request `index` of the exchange `serial`, delivered:
    /// fed to the exchange, whose progress says what comes next.
    #[allow(clippy::too_many_arguments)]
    fn answered(
        &mut self,
        c: usize,
        id: u64,
        serial: u64,
        index: usize,
        request: Request,
        acl: Option<(u32, u64)>,
        answered: Answered,
    ) -> Check {
        let Some(slot) = self.slot(c, serial) else {
            // An answer no exchange awaits any more (the acquire ended
            // meanwhile): the watches it left are dropped at once.
            let ok = answered.answer.is_ok();
            self.keep_watches(c, id, &request, ok, &[], None);
            return Ok(());
        };
        let answer = answered.answer;
        self.stats.retries += u64::from(answer == Err(Error::Unanswered));
        if slot == Slot::Acquire && answer == Err(Error::Unanswered) {
            self.acq(c).unanswered += 1;
        }
        let carry = self.carry_mut(c, slot);
        // A release the older version sent without the marker's operations
        // is answered as that version read its answer: the results of the
        // transaction it meant (the model of its bytes, `send_request`).
        let fed = match (answer.clone(), &carry.exchange().requests()[index]) {
            (Ok(Reply::Multi(results)), Request::Multi { ops }) if results.len() < ops.len() => {
                let mut results = results.into_iter();
                let full = ops
                    .iter()
                    .map(|op| match op {
                        contender::Op::Create { path, .. } if is_marker(path) => Done::Created(None),
                        contender::Op::Delete { path, .. } if is_marker(path) => Done::Deleted,
                        _ => results.next().unwrap_or(Done::Unknown),
                    })
                    .collect();
                Ok(Reply::Multi(full))
            }
            (answer, _) => answer,
        };
        // The client leaves the watches a request sets if it succeeded (a
        // `SetWatches`'s were registered before it was sent).
        let left = if fed.is_ok() || matches!(request, Request::SetWatches { .. }) {
            watched_names(&request).len()
        } else {
            0
        };
        // As the library's carrier, a failed answer comes with the client's
        // error (the keeper reports a watch refused only with one): here
        // the model's, a refused transaction's its failing operation's.
        let error = fed.as_ref().err().map(|e| cause(e).clone());
        let mut wire = wire::Answered::of(fed);
        // The client's watches are their nodes' names here.
        wire.watches = watched_names(&request).into_iter().take(left).collect();
        wire.error = error;
        // A watch the request left is kept only if the wire says whose it
        // is (and left to fire once not needed as it says: `World::let_go`).
        let kept = carry.answered(index, wire, Duration::ZERO);
        let complete = carry.is_complete();
        let sends: Vec<wire::Send> = std::iter::from_fn(|| carry.poll_send()).collect();
        if sends.iter().any(|send| send.again && send.index == index) {
            // Sent again until answered; it may have been applied.
            note!(self, "c{c} sends {} again", shown_request(&request));
            self.send(c, Op::Wire { request, acl }, Owner::Exchange { serial, index });
            return Ok(());
        }
        if slot == Slot::Acquire {
            self.note_answer(c, index, &request, &answer, answered.acl);
        }
        let early = self.keep_watches(c, id, &request, answer.is_ok(), &kept, answered.mzxid);
        // The events that came before the answer (a `SetWatches` fires
        // what changed since its zxid at once), handed over with their
        // watches: the driver takes them before it settles the exchange.
        for Early {
            name,
            whose,
            kind,
            state,
            write,
            ..
        } in early
        {
            self.on_watch(c, &name, whose, kind, state, write)?;
        }
        for send in sends {
            self.send_request(c, serial, send.index, send.request);
        }
        match complete {
            false => Ok(()),
            true if slot == Slot::Acquire => {
                let acq = self.acq(c);
                let carried = acq
                    .exchange
                    .take()
                    .expect("the acquire's exchange")
                    .carry
                    .finish();
                self.exchange_done(c, carried)
            }
            true => self.kept(c, slot),
        }
    }

    /// The acquire's exchange ended, as the library's driver takes it: the
    /// error of the request it blames is the acquire's last (as the
    /// library's carrier keeps it, `Carrier::finished`); the wait's table
    /// keeps the watches it left ([`wire::Watches::keep`]); while acquiring,
    /// the machine is told what arrived meanwhile ([`wire::Run::pump`]) and
    /// which watched nodes' watches are set and did not fire; then the
    /// exchange is settled.
    fn exchange_done(&mut self, c: usize, carried: wire::Carried<String, Error>) -> Check {
        let acquiring = self.contenders[c].state == CState::Acquiring;
        let Acq {
            run,
            handles,
            states,
            machine,
            wire,
            ..
        } = self.acq(c);
        if let (Some(fault), Some(_)) = (carried.blamed, carried.exchange.blame()) {
            run.blamed(fault);
        }
        let action = if acquiring {
            // As the library's driver (`wire::Run::exchanged`).
            let mut again = None;
            let fired = ask(handles, &mut again);
            let exchange = &carried.exchange;
            let action = run.exchanged(machine, wire, exchange, carried.kept, fired, || states.take());
            self.asked_again(c, again)?;
            action
        } else {
            run.watches_mut().keep(carried.kept);
            machine.settle(wire, &carried.exchange)
        };
        self.act(c, action)
    }

    /// The watches request `id` left, now that its answer came: each kept
    /// as `kept` says (the wire's [`wire::Exchange::watch`], in the order
    /// the request sets them: `watched_names`), else dropped, and the
    /// server asked to remove it (unless the client keeps another watch on
    /// that node). A `SetWatches`'s were registered before it was sent
    /// (`World::preregister`): those kept are the wait's from now on, and
    /// the events held for them (`Session::early`) are returned, to be
    /// taken now; those dropped go with theirs (one that fired needs no
    /// removal). Any other request leaves its watch only if it succeeded
    /// (`mzxid`: the node's, as the read found it).
    #[allow(clippy::too_many_arguments)]
    fn keep_watches(
        &mut self,
        c: usize,
        id: u64,
        request: &Request,
        ok: bool,
        kept: &[Option<Watch>],
        mzxid: Option<u64>,
    ) -> Vec<Early> {
        let s = self.contenders[c].session;
        let mut early = Vec::new();
        if !request.watches() {
            return early;
        }
        let registered = matches!(request, Request::SetWatches { .. });
        for (i, name) in watched_names(request).into_iter().enumerate() {
            let whose = kept.get(i).copied().flatten();
            if registered {
                let session = &mut self.sessions[s];
                let held = session.early.iter().position(|e| e.id == id && e.name == name);
                let held = held.map(|at| session.early.remove(at));
                let at = session
                    .registry
                    .iter()
                    .position(|k| k.name == name && k.awaiting == Some(id));
                match whose {
                    Some(whose) => {
                        if let Some(at) = at {
                            session.registry[at].awaiting = None;
                        }
                        self.stats.marker_watches += u64::from(whose == Watch::Marker);
                        early.extend(held);
                    }
                    None => {
                        let Some(at) = at else {
                            continue;
                        };
                        session.registry.remove(at);
                        note!(self, "c{c} drops the watch on {name} #{id} left");
                        if !self.sessions[s].registry.iter().any(|k| k.name == name) {
                            self.send_unwatch(c, name);
                        }
                    }
                }
                continue;
            }
            if !ok {
                continue;
            }
            let Some(whose) = whose else {
                self.unwatch(c, request);
                continue;
            };
            self.stats.marker_watches += u64::from(whose == Watch::Marker);
            self.hold(c, &name, whose);
            let registry = &mut self.sessions[s].registry;
            registry.retain(|k| k.name != name);
            let rearm = match whose {
                Watch::Listing => Rearm::Children,
                _ => mzxid.map_or(Rearm::Exist, Rearm::Read),
            };
            registry.push(Kept {
                name,
                whose,
                rearm,
                awaiting: None,
                detached: false,
            });
        }
        early
    }

    /// As the client does when it takes a `SetWatches` (before it is
    /// written: the server fires what changed before it answers), registers
    /// the watches request `request` sets, as request `id`'s: data watches
    /// (registered again relative to the session's last zxid) and `exists`
    /// watches, whose they are as the wire says (`whose`, in the order the
    /// request sets them). Any other request's watch is the client's once
    /// answered.
    fn preregister(&mut self, c: usize, id: u64, request: &Request, whose: &[Watch]) {
        let Request::SetWatches { data, .. } = request else {
            return;
        };
        let s = self.contenders[c].session;
        for (i, name) in watched_names(request).into_iter().enumerate() {
            let Some(whose) = whose.get(i).copied() else {
                self.broken = Some(format!(
                    "c{c}'s SetWatches sets a watch on {name} the wire names no owner of"
                ));
                continue;
            };
            self.stats.batched += u64::from(i == 0);
            let rearm = if i < data.len() {
                Rearm::Relative
            } else {
                Rearm::Exist
            };
            self.hold(c, &name, whose);
            let registry = &mut self.sessions[s].registry;
            registry.retain(|k| k.name != name);
            registry.push(Kept {
                name,
                whose,
                rearm,
                awaiting: Some(id),
                detached: false,
            });
        }
    }

    /// What the checks need to know of an answer to the acquire's exchange;
    /// the machine notes it too (a broken one may read it otherwise).
    fn note_answer(
        &mut self,
        c: usize,
        index: usize,
        request: &Request,
        answer: &Result<Reply, Error>,
        acl: Option<(u32, u64)>,
    ) {
        let session = session_id(self.contenders[c].session);
        let acq = self.acq(c);
        let mine = acq.machine.inner.node().map(|name| child_path(DIR, name));
        let (mut own_unreadable, mut found, mut also_gone) = (false, None, false);
        let (mut read_refused, mut read_gone) = (false, false);
        match (&acq.machine.action, request, answer) {
            (_, Request::Create { .. }, Err(Error::NodeExists)) => acq.create_exists = true,
            (Some(Action::Acquire(acquire::Action::ReadWatched { .. })), Request::GetData { .. }, Err(e)) => {
                read_refused = *e == Error::NoAuth;
                read_gone = *e == Error::NoNode;
            }
            (_, Request::GetData { path, .. }, Err(Error::NoAuth)) => {
                own_unreadable = mine.as_ref() == Some(path);
            }
            (Some(Action::Stat { .. }), Request::Exists { .. }, Ok(Reply::Stat(Some(stat)))) => {
                found = Some(stat.ephemeral_owner == session);
            }
            (
                Some(Action::Delete { record: true, .. }),
                Request::Multi { .. },
                Err(Error::Refused { error, .. }),
            ) if matches!(**error, Error::NoAuth | Error::NodeExists) => {
                // Refused whole: the directory's ACL, or a stranger's node
                // with the release marker's name.
                acq.refused = true;
            }
            (
                Some(Action::Acquire(acquire::Action::SetWatches { also, .. })),
                Request::Exists { path, .. } | Request::GetData { path, .. },
                Ok(Reply::Stat(None)) | Err(Error::NoNode),
            ) if also.iter().any(|node| child_of(path) == Some(node.as_str())) => also_gone = true,
            (_, Request::GetAcl { .. }, Ok(_)) => acq.acl = acl,
            (_, Request::List { .. }, Ok(Reply::Children { children, .. })) => {
                acq.listing = Some(children.clone());
            }
            _ => {}
        }
        acq.machine.read(index, request, answer);
        self.stats.own_unreadable += u64::from(own_unreadable);
        self.stats.also_gone += u64::from(also_gone);
        self.stats.read_watched_refused += u64::from(read_refused);
        self.stats.read_watched_gone += u64::from(read_gone);
        match found {
            Some(true) => self.stats.found_own += 1,
            Some(false) => self.stats.others_token += 1,
            None => {}
        }
    }

    /// The client drops the watch `request` left: it asks the server to
    /// remove it, unless it keeps another watch on that node (the server's
    /// serves both).
    fn unwatch(&mut self, c: usize, request: &Request) {
        let name = watch_name(request.path());
        let s = self.contenders[c].session;
        note!(self, "c{c} drops the watch {} left", shown_request(request));
        if !self.sessions[s].registry.iter().any(|k| k.name == name) {
            self.send_unwatch(c, name);
        }
    }

    /// The client asks the server to remove contender `c`'s session's
    /// watch on `name` (`removeWatches`), as the library's client does:
    /// while a request of the session that sets a watch on `name` is in
    /// flight (sent, not answered), the removal waits for its answer
    /// (`Session::deferred`): it would remove the watch that request sets
    /// (one per session and node on the server). That request's success
    /// cancels it (its watch is the server's one), its failure sends it
    /// ([`World::watch_answered`]); a lost connection drops it (the server
    /// dropped the session's watches).
    fn send_unwatch(&mut self, c: usize, name: String) {
        let s = self.contenders[c].session;
        if self.watching_in_flight(c, &name) {
            note!(
                self,
                "c{c}'s removal of its watch on {name} waits for the request in flight that sets one"
            );
            self.sessions[s].deferred.insert(name);
            return;
        }
        self.send(c, Op::Unwatch { name }, Owner::Unwatch);
    }

    /// A request of contender `c`'s session that sets a watch on `name`
    /// (not a `SetWatches`: the client registers its watches as it sends
    /// it) is in flight.
    fn watching_in_flight(&self, c: usize, name: &str) -> bool {
        self.contenders[c].pending.values().any(|(_, op)| match op {
            Op::Wire { request, .. } => {
                request.watches()
                    && !matches!(request, Request::SetWatches { .. })
                    && watched_names(request).iter().any(|n| n == name)
            }
            _ => false,
        })
    }

    /// The answer to `request`, a request of contender `c` that sets a
    /// watch, was delivered: a removal of the watch on its node that waits
    /// for it (`Session::deferred`) is cancelled if it left its watch (the
    /// client's watch, on the server), sent if it failed and no other
    /// such request is in flight.
    fn watch_answered(&mut self, c: usize, request: &Request, ok: bool) {
        if !request.watches() || matches!(request, Request::SetWatches { .. }) {
            return;
        }
        let s = self.contenders[c].session;
        for name in watched_names(request) {
            if !self.sessions[s].deferred.contains(&name) {
                continue;
            }
            if ok {
                note!(
                    self,
                    "c{c}'s removal of its watch on {name} is cancelled: a request set it again"
                );
                self.sessions[s].deferred.remove(&name);
            } else if !self.watching_in_flight(c, &name) {
                self.sessions[s].deferred.remove(&name);
                self.send(c, Op::Unwatch { name }, Owner::Unwatch);
            }
        }
    }

    /// The keeper's exchange is answered: the keeper feeds what reading the
    /// held node found to the machine (`wire::Keeping::answered`).
    fn kept(&mut self, c: usize, slot: Slot) -> Check {
        let holding = self.contenders[c].state == CState::Holding;
        let state = match self.sessions[self.contenders[c].session].state {
            Link::Connected => SessionState::Connected,
            Link::Disconnected => SessionState::Disconnected,
            Link::Expired => SessionState::Expired,
        };
        let k = &mut self.contenders[c];
        let acq = match slot {
            Slot::WriterKeeper => k.writer.as_mut(),
            Slot::Keeper | Slot::Acquire => k.acq.as_mut(),
        };
        let Some(acq) = acq else {
            return Ok(());
        };
        let Some((carried, downgrading)) = acq.keeping.take() else {
            return Ok(());
        };
        let carried = carried.carry.finish();
        let read = carried.exchange.held();
        let report = acq
            .keeper
            .as_mut()
            .map(|keeping| keeping.answered(&mut acq.machine.inner, carried, None, state));
        let (mine, lost) = (acq.machine.inner.czxid(), acq.machine.inner.is_lost());
        self.check_keeper_report(c, mine, report)?;
        if downgrading || slot == Slot::WriterKeeper {
            self.keep_writer(c);
            return Ok(());
        }
        let gone = match &read {
            contender::Answer::NoNode | contender::Answer::SessionEnded => true,
            contender::Answer::Ok(node) => Some(node.czxid) != mine,
            _ => false,
        };
        if holding && gone {
            self.stats.held_lost += 1;
            if !lost {
                return self.fail(format!(
                    "c{c}'s keeper read {read:?} for its node, and its machine does not say lost"
                ));
            }
        }
        self.keep(c);
        Ok(())
    }

    /// Checks the node the machine took as its own, when it takes one: it
    /// is a node its session made (a create's answer, or find-own's).
    fn check_taken(&mut self, c: usize) -> Check {
        let session = self.contenders[c].session;
        let acq = self.contenders[c].acq.as_ref().expect("an acquire");
        let (Some(name), Some(czxid)) = (acq.machine.inner.node(), acq.machine.inner.czxid()) else {
            return Ok(());
        };
        let czxid = czxid as u64;
        if acq.taken.as_ref().is_some_and(|(n, z)| n == name && *z == czxid) {
            return Ok(());
        }
        let name = name.to_owned();
        match self.nodes.get(&czxid) {
            Some(node) if node.name == name && node.owner == Some(session) => {}
            Some(node) => {
                return self.fail(format!(
                    "c{c} (s{session}) took {name} (czxid {czxid}) as its own, a node of {}",
                    node.owner.map_or("a stranger".to_owned(), |s| format!("s{s}"))
                ))
            }
            None => return self.fail(format!("c{c} took {name} with a czxid {czxid} no node has")),
        }
        self.acq(c).taken = Some((name, czxid));
        Ok(())
    }

    /// Carries out an action of the machine: its ends here, its requests
    /// through the wire (`Wire::exchange`).
    fn act(&mut self, c: usize, action: Action) -> Check {
        note!(self, "c{c} -> {action:?}");
        // What the machine learnt, the handle keeps for its next acquires
        // on the same connection (the driver, after every exchange).
        let acq = self.acq(c);
        if acq.machine.inner.own_readable() {
            let on = acq.run.connection();
            self.contenders[c].own_readable = Some(on);
        }
        self.check_taken(c)?;
        // The loop's next step, as the driver takes it (`wire::Run::next`).
        let connection = self.sessions[self.contenders[c].session].connection;
        let acq = self.acq(c);
        let step = acq
            .run
            .next(&mut acq.machine.inner, &acq.wire, action.clone(), 0, connection);
        self.check_place(c, step.place, &action)?;
        self.drop_marker_watch(c, step.drop_marker)?;
        // Whatever the machine does next, the wait it polled for is over
        // (as the driver drops its poll's future): a new wait polls anew.
        self.acq(c).polls = None;
        let acq = self.acq(c);
        match &action {
            Action::Grant { mark } => return self.granted(c, *mark),
            Action::GiveUp if acq.downgrade => {
                // The downgrade keeps the writer node: the node right after it is a writer.
                acq.outcome = Some(Outcome::GaveUp);
                self.stats.downgrades_kept += 1;
                self.end_replace(c, Replacement::NotApplied);
                return self.withdraw(c);
            }
            Action::GiveUp => {
                if !acq.deadline_fired && acq.may_wait {
                    return self.fail(format!("c{c} gives up with no deadline"));
                }
                acq.outcome = Some(Outcome::GaveUp);
                self.stats.gave_up += 1;
                return self.withdraw(c);
            }
            Action::Fail(failure) => {
                let (failure, downgrade) = (*failure, acq.downgrade);
                self.failed(c, failure)?;
                self.check_reported(c, failure)?;
                if downgrade {
                    let how = if failure == Failure::WriterLost {
                        Replacement::WriterGone
                    } else {
                        Replacement::NotApplied
                    };
                    self.end_replace(c, how);
                }
                return self.withdraw(c);
            }
            Action::Done(ended) => return self.ended(c, *ended),
            Action::Acquire(wait) => self.wait_action(c, wait)?,
            Action::Replace {
                writer,
                reader,
                record,
                ..
            } => {
                let downgrading = self.contenders[c]
                    .writer
                    .as_ref()
                    .and_then(|w| w.machine.inner.node().map(str::to_owned));
                if downgrading.as_deref() != Some(writer.as_str()) {
                    return self.fail(format!("c{c} replaces {writer}, downgrading {downgrading:?}"));
                }
                self.acq(c).replace_reader = Some(reader.clone());
                let mark = self.contenders[c].writer.as_ref().is_some_and(|w| w.mark);
                if *record && !mark {
                    return self.fail(format!(
                        "c{c}'s downgrade writes the record of {writer}, granted unmarked"
                    ));
                }
            }
            Action::ReadDirAcl => acq.acl = None,
            _ => {}
        }
        if let Action::Acquire(acquire::Action::Wait { poll }) = action {
            // How it waits (`wire::Run::wait`): on the watches of the nodes
            // it watches that the client holds and that did not fire, or
            // polling. A watched node's event kept while the exchange was
            // under way ends the wait at once; with nothing to watch, a
            // fresh look does.
            let state = self.session_state(c);
            let acq = self.acq(c);
            let plan = acq.run.wait(poll);
            let now = wire::Now {
                nothing_to_watch: plan.nothing_to_watch,
                ..wire::Now::quiet(state)
            };
            self.gather(c)?;
            return match self.acq(c).run.arrived(now, None) {
                Some(acquire::Input::Event(event)) => {
                    note!(self, "c{c} <- {event:?}, kept for the wait");
                    self.on_event(c, event)
                }
                Some(input) => self.fail(format!("c{c} took {input:?} from what arrived")),
                None => {
                    if plan.polls {
                        self.start_polls(c);
                    }
                    Ok(())
                }
            };
        }
        let wire::Next::Send(exchange) = step.next else {
            return self.fail(format!("c{c}: {action:?} sends nothing: {:?}", step.next));
        };
        self.carry(c, exchange)
    }

    /// What the checks need of an action of the wait.
    fn wait_action(&mut self, c: usize, action: &acquire::Action) -> Check {
        let acq = self.acq(c);
        acq.last = match action {
            acquire::Action::List => "List",
            acquire::Action::SetWatches { .. } => "SetWatches",
            acquire::Action::Wait { .. } => "Wait",
            acquire::Action::Rewatch { .. } => "Rewatch",
            acquire::Action::ReadWatched { .. } => "ReadWatched",
            acquire::Action::ReadRecord { .. } => "ReadRecord",
            acquire::Action::CheckOwn => "CheckOwn",
            _ => acq.last,
        };
        match action {
            acquire::Action::List => acq.watching.clear(),
            acquire::Action::SetWatches {
                watched,
                marker,
                also,
                ..
            } => {
                if let Some(marker) = marker {
                    if *marker != release_marker(watched) {
                        return self.fail(format!("c{c} watches {marker} for {watched}"));
                    }
                }
                acq.waited = true;
                // Whether it goes unread, the wire decides (`carry`).
                acq.blind = false;
                acq.read_watched = 0;
                acq.watching = std::iter::once(watched).chain(also).cloned().collect();
                let (several, permits) = (also.len() + 1, self.permits.map_or(1, NonZeroU32::get));
                self.stats.several_watched += u64::from(several > 1);
                if several > permits as usize {
                    return self.fail(format!(
                        "c{c} watches {several} nodes, with {permits} permits: {watched} and {also:?}"
                    ));
                }
            }
            acquire::Action::Wait { .. } => acq.waiting = true,
            acquire::Action::Rewatch { watched }
            | acquire::Action::ReadRecord { watched }
            | acquire::Action::ReadWatched { watched }
                if !acq.watching.contains(watched) =>
            {
                let what = format!(
                    "c{c} watches {watched} again, or reads its record, not {:?}",
                    acq.watching
                );
                return self.fail(what);
            }
            // No request herd behind a listing's watch, which fires at every
            // waiter on the directory: one read of the watched node per
            // `SetWatches` that set its watch unread, and none otherwise.
            acquire::Action::ReadWatched { watched } => {
                if !acq.blind || acq.read_watched > 0 {
                    let (blind, reads) = (acq.blind, acq.read_watched);
                    return self.fail(format!(
                        "c{c} reads {watched} again (its watch set unread: {blind}; read {reads} times since)"
                    ));
                }
                acq.read_watched += 1;
                self.stats.read_watched += 1;
            }
            acquire::Action::Rewatch { .. }
            | acquire::Action::ReadRecord { .. }
            | acquire::Action::CheckOwn => {}
            other => return self.fail(format!("c{c}: the wait's {other:?} reached the carrier")),
        }
        Ok(())
    }

    /// Tells the writer whose downgrade is under way how it ended.
    fn end_replace(&mut self, c: usize, how: Replacement) {
        if let Some(writer) = self.contenders[c].writer.as_mut() {
            note!(self, "c{c}'s writer: the downgrade ended {how:?}");
            writer.machine.inner.end_replace(how);
        }
    }

    /// A release marker's watch the machine no longer needs is dropped, and
    /// the client asks the server to remove it.
    ///
    /// Then no marker's watch of the wait is left with the client: one kept
    /// until the wait ends would be set on a node the machine no longer
    /// follows, and could wake it.
    fn drop_marker_watch(&mut self, c: usize, drop: bool) -> Check {
        if !drop {
            return Ok(());
        }
        let acq = self.acq(c);
        if acq.machine.mutation != Mutation::KeepMarkerWatch {
            let gone = acq.run.watches_mut().drop_marker().into_iter().collect();
            self.stats.unwatches += self.let_go(c, gone) as u64;
        }
        let s = self.contenders[c].session;
        let kept = self.sessions[s]
            .registry
            .iter()
            .find(|k| k.whose == Watch::Marker && !k.detached && k.awaiting.is_none());
        match kept {
            Some(kept) => {
                let name = kept.name.clone();
                self.fail(format!(
                    "c{c} keeps the watch on the marker {name}, which its machine no longer needs"
                ))
            }
            None => Ok(()),
        }
    }

    /// Checks the machine's place in the queue (`Contender::place`) when it
    /// changes: its node is the machine's; `ahead` counts the contenders
    /// before it in the listing the machine last decided on (the last one
    /// answered to it); `waits_on` is `None` exactly at a grant, and
    /// otherwise a node of that listing that precedes it.
    fn check_place(&mut self, c: usize, told: Option<acquire::Place>, action: &Action) -> Check {
        let acq = self.contenders[c].acq.as_ref().expect("an acquire");
        let granted = matches!(action, Action::Grant { .. });
        let Some(place) = told else {
            // A grant always places (but a downgrade's reader, never placed).
            if granted && !acq.downgrade {
                let place = acq.machine.inner.place();
                return self.fail(format!("c{c} is granted, its place unchanged: {place:?}"));
            }
            return Ok(());
        };
        if acq.machine.inner.node() != Some(place.node.as_str()) {
            return self.fail(format!(
                "c{c}'s place names {}, its node is {:?}",
                place.node,
                acq.machine.inner.node()
            ));
        }
        let Some(children) = acq.listing.as_ref() else {
            return self.fail(format!("c{c} is placed with no listing answered: {place:?}"));
        };
        let ahead = ordering::ahead(&place.node, children);
        if !children.contains(&place.node) || ahead != place.ahead {
            return self.fail(format!(
                "c{c}'s place {place:?}: {ahead} ahead in the listing it decided on {children:?}"
            ));
        }
        match (&place.waits_on, granted) {
            (None, true) => {}
            (Some(watched), false)
                if children.contains(watched) && ordering::ahead(&place.node, &[watched]) == 1 =>
            {
                self.stats.places_waiting += 1;
            }
            _ => {
                return self.fail(format!(
                    "c{c}'s place {place:?} with {action:?}, the listing {children:?}"
                ))
            }
        }
        self.stats.places_checked += 1;
        Ok(())
    }

    /// A holder commits a transaction (`transaction::guarded`): the check of
    /// its node, then a write of its data node outside the lock directory,
    /// sent on its session like any request (unless its guard knows the
    /// lock lost: `transaction::refused_before_sending`).
    fn commit(&mut self, c: usize) -> Check {
        let s = self.contenders[c].session;
        let acq = self.contenders[c].acq.as_ref().expect("a holder");
        let Some(name) = acq.machine.inner.node() else {
            return Ok(());
        };
        let node = child_path(DIR, name);
        let lost = acq.machine.inner.is_lost();
        let serial = self.next_serial();
        let user = vec![transaction::Op::SetData {
            path: data_path(c),
            data: format!("c{c} #{serial}").into_bytes(),
            version: None,
        }];
        let holder = transaction::Holder {
            node: &node,
            session: session_id(s),
            chroot: "/",
            lost,
        };
        match transaction::refused_before_sending(&[holder], &user) {
            None => {}
            Some(transaction::Unsent::Lost { holder: 0 }) => {
                note!(self, "c{c}'s transaction is not sent: its lock is lost");
                self.stats.txs_unsent += 1;
                return Ok(());
            }
            Some(other) => {
                return self.fail(format!("c{c}'s transaction is refused before sending: {other:?}"))
            }
        }
        let guarded = transaction::guarded(&[node.as_str()], user);
        let ops = guarded
            .ops()
            .iter()
            .map(|op| match op {
                transaction::Op::Check { path, version } => contender::Op::Check {
                    path: path.clone(),
                    version: *version,
                },
                transaction::Op::SetData { path, data, version } => contender::Op::SetData {
                    path: path.clone(),
                    data: data.clone(),
                    version: *version,
                },
                transaction::Op::Create { .. } | transaction::Op::Delete { .. } => {
                    unreachable!("a check and a write")
                }
            })
            .collect();
        note!(self, "c{c} commits a transaction checking {node}");
        self.contenders[c].txs.insert(serial, (guarded, node));
        self.stats.txs_sent += 1;
        let request = Request::Multi { ops };
        self.send(c, Op::Wire { request, acl: None }, Owner::Tx { serial });
        Ok(())
    }

    /// The answer to a holder's transaction (request `id`): read as the
    /// library reads it (`Guarded::answered_by`, `Guarded::failure`), it
    /// must say what the server did.
    /// A wait that may not read the nodes it waits on polls them
    /// (`Contender::polled`), each with the interpreter the library's
    /// driver runs (`wire::Poll`): a look of each is due at once.
    fn start_polls(&mut self, c: usize) {
        let serial = self.next_serial();
        let acq = self.acq(c);
        let polls: Vec<(wire::Poll, bool)> = acq
            .machine
            .inner
            .polled()
            .iter()
            .map(|name| {
                let poll = wire::Poll::new(&child_path(DIR, name), Backoff::poll(Duration::from_secs(1)));
                (poll, false)
            })
            .collect();
        note!(self, "c{c} polls {} node(s) it may not read", polls.len());
        self.stats.polls += 1;
        self.acq(c).polls = Some(Polls { serial, polls });
    }

    /// Contender `c`'s due looks leave (their pauses are over: the model's
    /// time is its steps).
    fn look(&mut self, c: usize) {
        let Some(Polls { serial, polls }) = self.contenders[c].acq.as_mut().and_then(|a| a.polls.as_mut())
        else {
            return;
        };
        let serial = *serial;
        let mut due = Vec::new();
        for (index, (poll, under_way)) in polls.iter_mut().enumerate() {
            if !*under_way {
                *under_way = true;
                poll.pause();
                due.push((index, poll.request().clone()));
            }
        }
        for (index, request) in due {
            self.stats.looks += 1;
            self.send(c, Op::Wire { request, acl: None }, Owner::Look { serial, index });
        }
    }

    /// The answer of a look of the wait's polls `serial`: what it found is
    /// the interpreter's (`wire::Poll::looked`); an event for the wait ends
    /// its polls, else the next look is due. A look of a wait that is over
    /// is ignored.
    fn looked(&mut self, c: usize, serial: u64, index: usize, answer: Result<Reply, Error>) -> Check {
        let Some(acq) = self.contenders[c].acq.as_mut() else {
            return Ok(());
        };
        let Some((poll, under_way)) = acq
            .polls
            .as_mut()
            .filter(|polls| polls.serial == serial)
            .and_then(|polls| polls.polls.get_mut(index))
        else {
            return Ok(());
        };
        *under_way = false;
        self.stats.looks_refused += u64::from(answer == Err(Error::NoAuth));
        acq.unanswered += u32::from(answer == Err(Error::Unanswered));
        // The model's time is its steps: lost answers never run out the
        // poll's retries (its connection comes back).
        let Some(event) = poll.looked(&answer, Duration::ZERO) else {
            return Ok(());
        };
        acq.polls = None;
        note!(self, "c{c}'s poll found {event:?}");
        self.stats.polls_gone += u64::from(event == NodeEvent::Deleted);
        let now = wire::Now {
            polled: Some(event),
            ..wire::Now::quiet(self.session_state(c))
        };
        self.take_arrivals_with(c, now, answer.err())
    }

    fn tx_answered(&mut self, c: usize, id: u64, serial: u64, answer: Result<Reply, Error>) -> Check {
        let Some((guarded, node)) = self.contenders[c].txs.remove(&serial) else {
            return Ok(());
        };
        let applied = self.tx_applied.get(&id).copied();
        match answer {
            Ok(Reply::Multi(results)) => {
                let kinds: Vec<transaction::Answered> = results
                    .iter()
                    .map(|done| match done {
                        Done::Check => transaction::Answered::Check,
                        Done::Created(_) => transaction::Answered::Create,
                        Done::Deleted => transaction::Answered::Delete,
                        Done::Written => transaction::Answered::SetData,
                        Done::Unknown => transaction::Answered::Other,
                    })
                    .collect();
                if !guarded.answered_by(&kinds) || applied != Some(true) {
                    return self.fail(format!(
                        "c{c}'s transaction answered {kinds:?}, applied {applied:?}"
                    ));
                }
            }
            Err(Error::Refused { index, error }) => {
                let refusal = if *error == Error::NoNode {
                    Refusal::NoNode
                } else {
                    Refusal::Other
                };
                let failure = guarded.failure(index, refusal);
                let holder = match failure {
                    transaction::Failure::Lost { node } | transaction::Failure::HolderRefused { node } => {
                        Some(node)
                    }
                    _ => None,
                };
                if holder != Some(node.as_str()) || applied != Some(false) {
                    return self.fail(format!(
                        "c{c}'s transaction refused at {index} ({error:?}): {failure:?}, applied {applied:?}"
                    ));
                }
            }
            // Not known to be applied or not: the library says so.
            Err(_) => return Ok(()),
            Ok(other) => return self.fail(format!("c{c}'s transaction answered {other:?}")),
        }
        self.stats.txs_answered += 1;
        Ok(())
    }

    /// The safety a holder's transaction promises, checked as the server
    /// commits it (at `self.zxid`, before its writes): the holder node it
    /// checks exists (the model's `check`), and, unless a stranger's node
    /// took that name (the documented limit of an unversioned `check`), the
    /// contender committing holds the lock there: the node is its
    /// session's, the directory's state grants it (`ordering::decide`), its
    /// machine was told of the grant and the node is still the one it
    /// holds (it may have begun to release: the release is sent after the
    /// transaction), and no other contender holds a conflicting lock (a
    /// writer with anyone, a reader with a writer).
    fn check_commit(&mut self, s: usize, ops: &[contender::Op]) {
        let c = self.sessions[s].contender;
        let zxid = self.zxid;
        for op in ops {
            let contender::Op::Check { path, .. } = op else {
                continue;
            };
            let Some(name) = child_of(path) else {
                continue;
            };
            let Some(node) = self.node(name) else {
                self.broken = Some(format!(
                    "c{c}'s transaction commits at {zxid}, its node {name} gone"
                ));
                return;
            };
            if node.owner != Some(s) {
                self.stats.txs_forged += 1;
                note!(self, "c{c}'s transaction passes the check of a stranger's {name}");
                self.commits.push((zxid, c, name.to_owned()));
                continue;
            }
            let czxid = node.czxid;
            let children = self.children();
            let decided = decide(name, &children);
            let mode = name.parse::<NodeName>().map(|n| n.mode()).ok();
            let holders = self.holders();
            let k = &self.contenders[c];
            let releasing = k.state == CState::Releasing
                && k.acq
                    .as_ref()
                    .is_some_and(|a| a.granted && a.machine.inner.czxid().map(|z| z as u64) == Some(czxid));
            let holds = releasing || holders.iter().any(|(d, _, n)| *d == c && n == name);
            let conflicting: Vec<&(usize, Mode, String)> = holders
                .iter()
                .filter(|(d, m, _)| *d != c && (*m == Mode::Write || mode == Some(Mode::Write)))
                .collect();
            // A semaphore's: the directory grants it a permit, and fewer
            // than N others hold one.
            let (granted, conflicting) = match self.permits {
                Some(permits) => {
                    let full = conflicting.len() >= permits.get() as usize;
                    let granted = permit_holds(name, &children, permits.get());
                    (granted, if full { conflicting } else { Vec::new() })
                }
                None => (decided == Ok(Decision::Granted), conflicting),
            };
            if !granted || !holds || !conflicting.is_empty() {
                self.broken = Some(format!(
                    "c{c}'s transaction commits at {zxid} checking {name}: the directory decides {decided:?}, \
                     c{c} holds {holds}, conflicting holders {conflicting:?}; children {children:?}"
                ));
                return;
            }
            self.commits.push((zxid, c, name.to_owned()));
        }
    }

    fn granted(&mut self, c: usize, mark: bool) -> Check {
        let basis = self.contenders[c].basis;
        let children = self.children_at(basis);
        let acq = self.contenders[c].acq.as_ref().expect("an acquire");
        let (mode, waited, last, check_data, started) =
            (acq.mode, acq.waited, acq.last, acq.check_data, acq.started);
        let me = acq.machine.inner.node().expect("a node").to_owned();
        let native = acq.layout == Layout::Native;
        // Its READ taken away after its watch was set, and then deleted by
        // others (an operator's `setACL`, then a deletion): the server
        // dropped the watch unheard as it fired, and the hand-off, which
        // trusts my node's watch, cannot tell. As a holder's node deleted
        // by others, a limit the library documents (docs/failure-model.md).
        let s = self.contenders[c].session;
        let unseen = !children.contains(&me) && self.silenced.contains(&(s, me.clone()));
        if unseen {
            note!(
                self,
                "c{c} granted with its node gone, whose deletion it could not be told"
            );
            self.stats.granted_unreadable_gone += 1;
        } else if !children.contains(&me) {
            let deleted = self
                .live
                .get(&me)
                .map_or_else(|| self.last_named(&me).and_then(|n| n.dzxid), |_| None);
            return self.fail(format!(
                "c{c} granted on a message of zxid {basis}, when its node {me} was gone (deleted at {deleted:?})"
            ));
        }
        match (self.permits, decide(&me, &children)) {
            _ if unseen => {}
            (Some(permits), _) => {
                let before = predecessors(&me, &children);
                if !permit_holds(&me, &children, permits.get()) {
                    return self.fail(format!(
                        "c{c} granted {me} on a message of zxid {basis}, with {} contenders before it \
                         and {permits} permits: {children:?}",
                        before.len()
                    ));
                }
            }
            (None, Ok(Decision::Granted)) => {}
            (None, other) => {
                return self.fail(format!(
                    "c{c} granted {me} on a message of zxid {basis}, when the directory {children:?} said {other:?}"
                ))
            }
        }
        // A semaphore's release is a plain deletion.
        if mark != (self.permits.is_none() && mode == Mode::Write && waited && native) {
            return self.fail(format!(
                "c{c} ({mode}, waited: {waited}) granted with mark {mark}"
            ));
        }
        if check_data && !self.lock_data_since(started) {
            return self.fail(format!(
                "c{c} granted, the directory holding data that is not the lock's since it started"
            ));
        }
        if self.contenders[c].acq.as_ref().is_some_and(|a| a.downgrade) {
            let session = self.contenders[c].session;
            let writer = self.contenders[c].writer.take();
            // The node under the writer's name (a stranger may have made it
            // again under that name: the transaction deletes by name).
            let name = writer.as_ref().and_then(|w| w.machine.inner.node());
            let node = name.and_then(|name| self.last_named(name));
            if !node.is_some_and(|n| n.deleted_by == Some(By::Downgrade { s: session })) {
                return self.fail(format!(
                    "c{c}'s downgrade granted its reader, and its writer node was not deleted by it: {:?}",
                    node.map(|n| (&n.name, n.deleted_by))
                ));
            }
            if let Some(mut writer) = writer {
                writer.machine.inner.end_replace(Replacement::Applied);
                if writer.machine.inner.is_held() || writer.machine.inner.is_lost() {
                    return self.fail(format!("c{c}'s writer machine holds on after its downgrade"));
                }
            }
        }
        // A reader woken by the deletion of a writer node a downgrade replaced.
        let by_downgrade = self.contenders[c].acq.as_ref().is_some_and(|a| {
            a.watching.iter().any(|w| {
                self.last_named(w)
                    .is_some_and(|n| matches!(n.deleted_by, Some(By::Downgrade { .. })))
            })
        });
        self.stats.downgrade_handoffs += u64::from(by_downgrade && mode == Mode::Read);
        self.contenders[c].state = CState::Holding;
        let acq = self.acq(c);
        acq.granted = true;
        acq.mark = mark;
        acq.watching.clear();
        // The guard's keeper takes over my node's watch, if the wait's
        // table holds one (its event, if it fired and was not asked for,
        // with it), as the driver hands over the one it kept.
        let handed = acq.run.watches_mut().take_own();
        let handed_event = match handed.as_ref().and_then(|name| acq.handles.remove(name)) {
            Some(Handle::Fired(kind, state)) => Some((kind, state)),
            _ => None,
        };
        self.drop_wait_watches(c);
        let acq = self.acq(c);
        // Odd contenders are candidates of an election: a granted writer
        // announces itself on its node.
        if mode == Mode::Write && native && c % 2 == 1 {
            let name = me.clone();
            let czxid = acq.machine.inner.czxid().unwrap_or_default() as u64;
            let data = announcement(&format!("c{c}"));
            self.send(c, Op::Announce { name, czxid, data }, Owner::Announce);
        }
        let acq = self.acq(c);
        acq.waiting = false;
        let counts = acq.machine.inner.counts();
        // The keeper waits on the handed watch (the registry's, whose it
        // is now), or sets one (`Contender::first_watch_after`: at once
        // here, where no clock runs; the library waits `FIRST_WATCH_AFTER`
        // first).
        let s = self.contenders[c].session;
        let acq = self.acq(c);
        acq.keeper = Some(wire::Keeping::new(
            child_path(DIR, &me).into(),
            &acq.machine.inner,
            handed.clone(),
        ));
        // A watch the machine does not count as set (one from an older
        // connection): the keeper drops it, as the library's does, and
        // sets its own.
        let dropped = acq.machine.inner.first_watch_after().is_some();
        if let (true, Some(name)) = (dropped, handed) {
            let own = wire::Watching {
                kind: Watch::Own,
                path: child_path(DIR, &name),
                lingers: false,
                watch: name,
            };
            self.let_go(c, vec![own]);
        }
        for kept in &mut self.sessions[s].registry {
            if kept.name == me && kept.whose == Watch::Own {
                kept.whose = Watch::Held;
            }
        }
        self.keep(c);
        if let (false, Some((kind, state))) = (dropped, handed_event) {
            self.keeper_event(c, kind, state)?;
        }
        self.stats.grants += 1;
        self.stats.peer_grants += u64::from(!native);
        if self.permits.is_some() {
            self.stats.permit_grants += 1;
            self.stats.permit_handoffs += u64::from(counts.handoff);
        }
        self.stats.handoffs += u64::from(counts.handoff);
        self.stats.marker_grants += u64::from(counts.marked);
        match last {
            "ReadRecord" => self.stats.record_grants += 1,
            "CheckOwn" => self.stats.checked_grants += 1,
            _ => {}
        }
        self.check_safety()
    }

    /// Checks that a failure of the acquire is justified.
    fn failed(&mut self, c: usize, failure: Failure) -> Check {
        let session = self.contenders[c].session;
        let basis = self.contenders[c].basis;
        let acq = self.contenders[c].acq.as_ref().expect("an acquire");
        let czxid = acq.machine.inner.czxid().map(|z| z as u64);
        let seq = acq.machine.inner.seq();
        let (started, removals, create_exists) = (acq.started, acq.removals, acq.create_exists);
        match failure {
            Failure::Lost => {
                self.stats.lost += 1;
                if czxid.is_none_or(|z| self.alive(z)) {
                    return self.fail(format!("c{c} failed with Lost, but its node {czxid:?} exists"));
                }
            }
            Failure::SessionEnded => {
                self.stats.session_ended += 1;
                if self.sessions[session].state != Link::Expired {
                    return self.fail(format!("c{c} failed with SessionEnded in a live session"));
                }
            }
            Failure::Exhausted => {
                self.stats.exhausted += 1;
                let seq = seq.expect("a node");
                let shared = self
                    .nodes
                    .values()
                    .filter(|n| n.czxid <= basis && n.dzxid.is_none_or(|d| d > basis))
                    .any(|n| Some(n.czxid) != czxid && n.seq == seq);
                if is_valid_seq(seq) && !shared {
                    return self.fail(format!("c{c} failed with Exhausted at sequence {seq}"));
                }
            }
            Failure::DirectoryHoldsData => {
                self.stats.holds_data += 1;
                if !self.foreign_data_since(started) {
                    return self.fail(format!(
                        "c{c} failed with DirectoryHoldsData, the directory holding the lock's data all along"
                    ));
                }
            }
            Failure::WriterLost => {
                let writer = self.contenders[c]
                    .writer
                    .as_ref()
                    .and_then(|w| w.machine.inner.czxid())
                    .and_then(|z| self.nodes.get(&(z as u64)));
                // Or by a downgrade of its session (this one or one before,
                // whose answer was lost) whose reader node, made by the same
                // transaction, is gone since: the lock is lost all the same,
                // and a writer whose keeper cannot read its node (its ACL)
                // does not learn it before it downgrades again.
                let reader_gone = |writer: &Node| {
                    writer
                        .dzxid
                        .and_then(|z| self.nodes.get(&z))
                        .is_some_and(|reader| reader.owner == Some(session) && reader.dzxid.is_some())
                };
                let justified = writer.is_some_and(|n| match n.deleted_by {
                    Some(By::Stranger | By::Expiry) => true,
                    Some(By::Downgrade { s }) => s == session && reader_gone(n),
                    _ => false,
                });
                if !justified {
                    return self.fail(format!(
                        "c{c} failed with WriterLost, its writer node {:?}",
                        writer.map(|n| (&n.name, n.deleted_by))
                    ));
                }
            }
            Failure::ListingTooLarge => {
                self.stats.listing_refused += 1;
                // The listing it was refused at: the directory as the
                // message that failed it found it, larger than the limit.
                let size = zk_rwlock_core::limits::listing_size(&self.listed_at(basis));
                let refused = acq.machine.inner.refused_listing();
                let justified = match (self.listing_limit, refused) {
                    (Some(limit), Some(r)) => size > limit && r.size > limit && r.limit == limit,
                    _ => false,
                };
                if !justified {
                    return self.fail(format!(
                        "c{c} failed with ListingTooLarge: the listing at {basis} is {size} bytes, \
                         limit {:?}, refused {refused:?}",
                        self.listing_limit
                    ));
                }
            }
            Failure::PermitsDisagree => {
                self.stats.permits_disagree += 1;
                // A contender before mine, at the message that failed it,
                // carries another permit count, and the machine names it.
                let permits = self.permits.map_or(0, NonZeroU32::get);
                let me = acq.machine.inner.node().unwrap_or_default();
                let before = predecessors(me, &self.children_at(basis));
                let named = acq.machine.inner.conflict();
                let justified = named.is_some_and(|(node, theirs)| {
                    theirs != permits
                        && permits_of(node) == Some(theirs)
                        && before.iter().any(|(_, name)| name == node)
                });
                if !justified {
                    return self.fail(format!(
                        "c{c} failed with PermitsDisagree naming {named:?}, the contenders before it {before:?}"
                    ));
                }
            }
            Failure::NoDirectory if self.dir_removals - removals >= MAX_DIRECTORY_ATTEMPTS => {}
            Failure::Request if create_exists => {}
            other => return self.fail(format!("c{c} failed with {other:?}")),
        }
        let acq = self.acq(c);
        if acq.outcome.is_none() {
            acq.outcome = Some(Outcome::Failed(failure));
        }
        Ok(())
    }

    /// Checks what a failed acquire reports ([`Failure::reported`], made
    /// from what the carrier knows as the driver knows it) against the
    /// model (the module's documentation, "What is checked").
    fn check_reported(&mut self, c: usize, failure: Failure) -> Check {
        let session = self.contenders[c].session;
        let basis = self.contenders[c].basis;
        let now = self.session_state(c);
        let expired = self.sessions[session].state == Link::Expired;
        // Out of the world while its report is checked against it.
        let mut acq = self.contenders[c].acq.take().expect("an acquire");
        let Acq {
            run,
            machine,
            unanswered,
            ..
        } = &mut acq;
        let (machine, unanswered) = (&machine.inner, *unanswered);
        // The poll's error first, then the carrier's (`wire::Run::reported`).
        let reported = run.reported(failure, machine, now, request_error);
        let shown = format!("{reported:?}");
        let node_of = |czxid: Option<i64>| czxid.and_then(|z| self.nodes.get(&(z as u64)));
        let why: Option<String> = match reported {
            Reported::SessionExpired if !expired => Some("its session lives".into()),
            Reported::SessionExpired => (!matches!(
                failure,
                Failure::Lost | Failure::SessionEnded | Failure::WriterLost
            ))
            .then(|| "the failure is neither a node gone nor the session's end".into()),
            Reported::SessionClosed | Reported::AuthFailed => Some("the model's sessions only expire".into()),
            Reported::Lost { .. } if expired => Some("its session expired".into()),
            Reported::Lost { node } => {
                // The node lost: mine, or the writer node a downgrade replaces.
                let gone = match failure {
                    Failure::Lost | Failure::SessionEnded => Some(node_of(machine.czxid())),
                    Failure::WriterLost => Some(node_of(
                        self.contenders[c]
                            .writer
                            .as_ref()
                            .and_then(|w| w.machine.inner.czxid()),
                    )),
                    _ => None,
                };
                match (gone, node) {
                    (None, _) => Some("the failure is no node gone".into()),
                    (_, None) => Some("it names no node".into()),
                    (Some(Some(n)), Some(name)) if n.name == name && n.dzxid.is_some() => None,
                    (Some(n), Some(name)) => Some(format!(
                        "it names {name}, the node gone being {:?}",
                        n.map(|n| (&n.name, n.dzxid))
                    )),
                }
            }
            Reported::SequenceExhausted => {
                (failure != Failure::Exhausted).then(|| "the counter is not used up".into())
            }
            Reported::ListingTooLarge {
                contenders,
                size,
                limit,
            } => {
                // The listing refused: the directory as the message that
                // failed the acquire found it.
                let listed = self.listed_at(basis);
                let listed_size = zk_rwlock_core::limits::listing_size(&listed);
                let truth = failure == Failure::ListingTooLarge
                    && self.listing_limit == Some(limit)
                    && size == listed_size
                    && contenders == listed.iter().filter(|c| c.parse::<NodeName>().is_ok()).count()
                    && size > limit;
                (!truth).then(|| {
                    format!(
                        "the listing at {basis} has {} children, {listed_size} bytes, limit {:?}",
                        listed.len(),
                        self.listing_limit
                    )
                })
            }
            Reported::InvalidName { .. } => Some("every node's name is a contender's".into()),
            Reported::NoAnswer(e) => {
                (failure != Failure::Request || e != Error::Unanswered || unanswered == 0)
                    .then(|| format!("{unanswered} answers lost since its last request"))
            }
            // The one request the model fails for good: a create whose
            // name is taken (at the counter's limit).
            Reported::RequestFailed(e) => (failure != Failure::Request || e != Error::NodeExists)
                .then(|| "the only request failed for good is a create of a name taken".into()),
            Reported::Unexplained => Some("a request failed with no error known".into()),
            Reported::DirectoryHoldsData => (failure != Failure::DirectoryHoldsData)
                .then(|| "the failure is not the directory's data".into()),
            Reported::NoDirectory => {
                (failure != Failure::NoDirectory).then(|| "the failure is not the directory's".into())
            }
            Reported::PermitsDisagree { node, carried, asked } => {
                let permits = self.permits.map_or(0, NonZeroU32::get);
                let me = machine.node().unwrap_or_default();
                let before = predecessors(me, &self.children_at(basis));
                let truth = failure == Failure::PermitsDisagree
                    && asked == permits
                    && carried != permits
                    && node.is_some_and(|node| {
                        permits_of(node) == Some(carried) && before.iter().any(|(_, name)| name == node)
                    });
                (!truth).then(|| format!("asked {permits}, the contenders before it {before:?}"))
            }
        };
        self.contenders[c].acq = Some(acq);
        if let Some(why) = why {
            return self.fail(format!("c{c} failed with {failure:?} and reports {shown}: {why}"));
        }
        self.stats.reports += 1;
        match shown.as_str() {
            "SessionExpired" => self.stats.reported_expired += 1,
            s if s.starts_with("Lost") => self.stats.reported_lost += 1,
            s if s.starts_with("RequestFailed") || s.starts_with("NoAnswer") => {
                self.stats.reported_request += 1
            }
            _ => {}
        }
        Ok(())
    }

    /// The live nodes of the current session carrying this acquire's token.
    fn left_behind(&self, c: usize) -> Vec<String> {
        let session = self.contenders[c].session;
        let acq = self.contenders[c].acq.as_ref().expect("an acquire");
        self.live
            .iter()
            .filter(|(_, z)| self.nodes[z].owner == Some(session))
            .filter(|(name, _)| {
                name.parse::<NodeName>()
                    .is_ok_and(|n| n.token() == Some(acq.token) && n.layout() == acq.layout)
            })
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// Checks how a release or a withdrawal ended, and finishes the acquire.
    fn ended(&mut self, c: usize, ended: Ended) -> Check {
        let state = self.contenders[c].state;
        let session = self.contenders[c].session;
        let restricted = self.restricted & (1 << c) != 0;
        let acq = self.contenders[c].acq.as_ref().expect("an acquire");
        let what = if state == CState::Releasing {
            "release"
        } else {
            "withdrawal"
        };
        let czxid = acq.machine.inner.czxid().map(|z| z as u64);
        let node = czxid.and_then(|z| self.nodes.get(&z));
        match ended {
            Ended::Failed => return self.fail(format!("c{c}'s {what} failed")),
            Ended::SessionEnded => {
                if self.sessions[session].state != Link::Expired {
                    return self.fail(format!("c{c}'s {what} ended with the session, which lives"));
                }
                self.stats.release_expired += u64::from(state == CState::Releasing && acq.released_live);
            }
            Ended::Lost => {
                let Some(node) = node.filter(|_| state == CState::Releasing) else {
                    return self.fail(format!("c{c}'s {what} ended Lost"));
                };
                if node.dzxid.is_none() {
                    return self.fail(format!(
                        "c{c}'s release ended Lost, but its node {} exists",
                        node.name
                    ));
                }
                if matches!(node.deleted_by, Some(By::Session { s, .. }) if s == session) {
                    return self.fail(format!(
                        "c{c}'s release ended Lost, but its own session deleted {}",
                        node.name
                    ));
                }
                self.stats.released_lost += 1;
            }
            Ended::Deleted => {
                let left = self.left_behind(c);
                if !left.is_empty() {
                    return self.fail(format!("c{c}'s {what} ended Deleted, leaving {left:?}"));
                }
                let plain = node.and_then(|n| n.deleted_by)
                    == Some(By::Session {
                        s: session,
                        record: false,
                    });
                if state == CState::Releasing && acq.mark && plain && !acq.refused && !restricted {
                    return self.fail(format!(
                        "c{c} released {:?} without the release record, which the server takes from it",
                        acq.machine.inner.node()
                    ));
                }
            }
        }
        // A request on the node, or on a node made again under its name.
        let name = acq.machine.inner.node();
        if acq.machine.inner.is_revoked()
            && !self
                .nodes
                .values()
                .any(|n| Some(n.name.as_str()) == name && n.revoke)
        {
            return self.fail(format!(
                "c{c} says revoked, with no revocation request on its node"
            ));
        }
        if state == CState::Releasing {
            self.acq(c).outcome = Some(Outcome::Released(ended));
        }
        self.finish(c);
        Ok(())
    }

    // ---- checks ----

    /// The contenders that hold: granted, release not begun, not lost, and
    /// their node still exists (a foreign deletion or the session's expiry
    /// takes the lock away before the machine knows).
    fn holders(&self) -> Vec<(usize, Mode, String)> {
        self.contenders
            .iter()
            .enumerate()
            .filter(|(_, k)| k.state == CState::Holding)
            .filter_map(|(c, k)| {
                let acq = k.acq.as_ref()?;
                let machine = &acq.machine.inner;
                let czxid = machine.czxid()? as u64;
                let name = machine.node()?.to_owned();
                (!machine.is_lost() && self.alive(czxid)).then_some((c, acq.mode, name))
            })
            // A writer whose downgrade is under way holds until its node goes.
            .chain(self.contenders.iter().enumerate().filter_map(|(c, k)| {
                let machine = &k.writer.as_ref()?.machine.inner;
                let czxid = machine.czxid()? as u64;
                let name = machine.node()?.to_owned();
                (machine.is_held() && self.alive(czxid)).then_some((c, Mode::Write, name))
            }))
            // Its reader holds from the transaction on, before it is told.
            .chain(self.contenders.iter().enumerate().filter_map(|(c, k)| {
                let acq = k
                    .acq
                    .as_ref()
                    .filter(|a| a.downgrade && k.state == CState::Acquiring)?;
                let reader = acq.replace_reader.as_ref()?;
                let node = self.node(reader)?;
                (node.owner == Some(k.session)).then(|| (c, Mode::Read, reader.clone()))
            }))
            .collect()
    }

    fn check_safety(&self) -> Check {
        if let Some(what) = &self.broken {
            return self.fail(what.clone());
        }
        let holders = self.holders();
        match self.permits {
            Some(permits) if holders.len() > permits.get() as usize => {
                return self.fail(format!("more than {permits} hold a permit: {holders:?}"));
            }
            Some(permits) => self.check_herd(permits.get())?,
            None if holders.len() > 1 && holders.iter().any(|(_, m, _)| *m == Mode::Write) => {
                return self.fail(format!("a writer holds together with others: {holders:?}"));
            }
            None => {}
        }
        for (c, k) in self.contenders.iter().enumerate() {
            if let Some(writer) = &k.writer {
                let machine = &writer.machine.inner;
                if machine.is_lost() && machine.czxid().is_some_and(|z| self.alive(z as u64)) {
                    return self.fail(format!(
                        "c{c}'s downgrading writer says lost, and its node exists"
                    ));
                }
            }
            let Some(acq) = k.acq.as_ref().filter(|_| k.state == CState::Holding) else {
                continue;
            };
            let machine = &acq.machine.inner;
            let alive = machine.czxid().is_some_and(|z| self.alive(z as u64));
            // A guard says lost only once its node is gone.
            if machine.is_lost() && alive {
                return self.fail(format!(
                    "c{c}'s machine says lost, and its node {:?} exists",
                    machine.node()
                ));
            }
            // A guard whose node is gone learns it, sooner or later.
            if !machine.is_lost() && !alive && !self.will_be_told(c) {
                return self.fail(format!(
                    "c{c}'s node {:?} is gone, and nothing will tell its keeper",
                    machine.node()
                ));
            }
            // And so does one whose node holds a revocation request.
            if !machine.is_lost() && alive && !self.will_learn_revocation(c) {
                return self.fail(format!(
                    "c{c}'s node {:?} holds a revocation request, and nothing will tell it",
                    machine.node()
                ));
            }
        }
        Ok(())
    }

    /// No herd (see `core::semaphore`): a contender whose node is live keeps
    /// watches on at most `permits` other live nodes, and each of them is
    /// one of the `permits` contenders right before its node in the queue
    /// (counted as the semaphore counts: valid sequences), so that a
    /// deletion notifies at most `permits` contenders. The watches counted
    /// are those the client keeps for the wait (`Watch::Watched`), which it
    /// drops when the wait is over; the server may still hold one whose
    /// removal is under way.
    fn check_herd(&self, permits: u32) -> Check {
        let children = self.children();
        for (c, k) in self.contenders.iter().enumerate() {
            let Some(acq) = k.acq.as_ref() else {
                continue;
            };
            let machine = &acq.machine.inner;
            let (Some(me), Some(czxid)) = (machine.node(), machine.czxid()) else {
                continue;
            };
            if !self.alive(czxid as u64) {
                continue;
            }
            let watched: Vec<&String> = self.sessions[k.session]
                .registry
                .iter()
                .filter(|kept| {
                    kept.whose == Watch::Watched && !kept.detached && kept.name != me && self.live(&kept.name)
                })
                .map(|kept| &kept.name)
                .collect();
            if watched.len() > permits as usize {
                return self.fail(format!(
                    "c{c} ({me}) keeps watches on {} nodes, with {permits} permits: {watched:?}",
                    watched.len()
                ));
            }
            if watched.is_empty() {
                continue;
            }
            let before = predecessors(me, &children);
            let near = &before[before.len().saturating_sub(permits as usize)..];
            if let Some(far) = watched.iter().find(|w| !near.iter().any(|(_, n)| n == **w)) {
                return self.fail(format!(
                    "c{c} ({me}) watches {far}, not one of the {permits} contenders right before it: {near:?}"
                ));
            }
        }
        Ok(())
    }

    /// Something will tell holder `c` that its node is gone: its watch (set
    /// on the server, fired and not delivered yet, or to be set again at the
    /// reconnection), the keeper's read under way, or the session's expiry.
    fn will_be_told(&self, c: usize) -> bool {
        let k = &self.contenders[c];
        let s = k.session;
        let session = &self.sessions[s];
        let Some(name) = k.acq.as_ref().and_then(|a| a.machine.inner.node()) else {
            return true;
        };
        session.state == Link::Expired
            || self.watches.get(name).is_some_and(|w| w.contains(&s))
            || session.outbound.iter().any(|(_, m)| match m {
                Msg::Watch { name: n, .. } => n == name,
                Msg::State(state) => state.is_over(),
                _ => false,
            })
            || (session.state == Link::Disconnected && session.registry.iter().any(|k| k.name == name))
            || [k.acq.as_ref(), k.writer.as_ref()]
                .into_iter()
                .flatten()
                .any(|a| a.keeping.is_some())
            // A node its own ACL keeps it from reading: its keeper could
            // not watch it, or its watch is silent (READ taken away after
            // it was set), and only the session's end (and the lease) will
            // tell, as the library documents.
            || self.deaf.contains(&(s, name.to_owned()))
            // Its wait's watch on it, which its keeper took over, set by a
            // `SetWatches` after READ was taken: as silent.
            || self.silenced.contains(&(s, name.to_owned()))
            || k.acq.as_ref().is_some_and(|a| {
                a.keeper.as_ref().is_some_and(wire::Keeping::is_stopped)
                    && a.machine
                        .inner
                        .czxid()
                        .and_then(|z| self.nodes.get(&(z as u64)))
                        .is_some_and(|n| n.denied == Some(c))
            })
    }

    /// Holder `c` (its node live) will know of a revocation request its
    /// node holds (its data now: one written over is no request any more),
    /// as the library documents ("noticed within the later of
    /// `FIRST_WATCH_AFTER` and the server's notification"): it knows
    /// (`Contender::is_revoked`: a read of its node while it waited, or
    /// the keeper's), or an event of its node is on its way, or the
    /// keeper's read is under way, or a reconnection will fire its watch
    /// (a write after the watch was set); or it cannot know (its node's
    /// ACL denies it READ), or its session is over.
    fn will_learn_revocation(&self, c: usize) -> bool {
        let k = &self.contenders[c];
        let s = k.session;
        let session = &self.sessions[s];
        let Some(acq) = k.acq.as_ref() else {
            return true;
        };
        let machine = &acq.machine.inner;
        let Some(node) = machine.czxid().and_then(|z| self.nodes.get(&(z as u64))) else {
            return true;
        };
        let name = &node.name;
        machine.is_revoked()
            || !is_revocation(&node.data)
            || node.denied == Some(c)
            || session.state == Link::Expired
            || session.outbound.iter().any(|(_, m)| match m {
                Msg::Watch { name: n, .. } => n == name,
                Msg::State(state) => state.is_over(),
                _ => false,
            })
            || [k.acq.as_ref(), k.writer.as_ref()]
                .into_iter()
                .flatten()
                .any(|a| a.keeping.is_some())
            || (session.state == Link::Disconnected
                && session
                    .registry
                    .iter()
                    .any(|kept| &kept.name == name && matches!(self.rearm(s, kept), Some(Some(_)))))
    }

    /// Why contender `c` has not finished, for the report of a stuck run.
    fn describe(&self, c: usize) -> String {
        let k = &self.contenders[c];
        let s = &self.sessions[k.session];
        match &k.acq {
            None => "idle".to_owned(),
            Some(acq) => format!(
                "{:?} {:?} as {:?}, last action {}, waiting {}, watching {:?} (exists: {:?}; set unread {}, read {}), keeper {:?}, session {:?}, pending {:?}, exchange {:?}, machine {:?}",
                k.state,
                acq.mode,
                acq.machine.inner.node(),
                acq.last,
                acq.waiting,
                acq.watching,
                acq.watching.iter().map(|w| self.live(w)).collect::<Vec<_>>(),
                acq.blind,
                acq.read_watched,
                acq.keeper,
                s.state,
                k.pending,
                acq.exchange.as_ref().map(Carried::exchange),
                acq.machine.inner,
            ),
        }
    }

    // ---- the scheduler ----

    /// Every enabled move of one kind.
    fn moves(&self, kind: Kind) -> Vec<Move> {
        let current = |w: &World, s: usize| w.contenders[w.sessions[s].contender].session == s;
        let sessions = 0..self.sessions.len();
        match kind {
            Kind::Deliver => sessions
                .filter(|&s| !self.sessions[s].outbound.is_empty())
                .map(Move::Deliver)
                .collect(),
            // A polling wait's looks that are due.
            Kind::Look => (0..self.contenders.len())
                .filter(|&c| {
                    let k = &self.contenders[c];
                    k.state == CState::Acquiring
                        && k.acq
                            .as_ref()
                            .and_then(|a| a.polls.as_ref())
                            .is_some_and(|polls| polls.polls.iter().any(|(_, under_way)| !under_way))
                })
                .map(Move::Look)
                .collect(),
            Kind::Apply => sessions
                .filter(|&s| {
                    self.sessions[s].state == Link::Connected && !self.sessions[s].inflight.is_empty()
                })
                .map(Move::Apply)
                .collect(),
            Kind::Release => (0..self.contenders.len())
                .filter(|&c| self.contenders[c].state == CState::Holding)
                .map(Move::Release)
                .collect(),
            Kind::Downgrade => (0..self.contenders.len())
                .filter(|&c| {
                    let k = &self.contenders[c];
                    k.state == CState::Holding
                        && self.permits.is_none()
                        && self.old & (1 << c) == 0
                        && self.sessions[k.session].state != Link::Expired
                        && k.acq.as_ref().is_some_and(|a| {
                            a.layout == Layout::Native && a.mode == Mode::Write && a.machine.inner.is_held()
                        })
                })
                .map(Move::Downgrade)
                .collect(),
            Kind::Observe => vec![Move::Observe],
            Kind::Start => (0..self.contenders.len())
                .filter(|&c| self.contenders[c].state == CState::Idle)
                .map(Move::Start)
                .collect(),
            Kind::Reconnect => sessions
                .filter(|&s| self.sessions[s].state == Link::Disconnected)
                .map(Move::Reconnect)
                .collect(),
            // A timed acquire's deadline bounds its wait, not its first look
            // (`contender::Deadlines`): during the look only the answers'
            // due time can pass, when they do not come (disconnected).
            Kind::Deadline => (0..self.contenders.len())
                .filter(|&c| {
                    let k = &self.contenders[c];
                    k.state == CState::Acquiring
                        && k.acq.as_ref().is_some_and(|a| {
                            a.has_deadline
                                && !a.deadline_fired
                                && (!a.machine.inner.looking()
                                    || self.sessions[k.session].state != Link::Connected)
                        })
                })
                .map(Move::Deadline)
                .collect(),
            Kind::Disconnect => sessions
                .filter(|&s| self.sessions[s].state == Link::Connected && current(self, s))
                .map(Move::Disconnect)
                .collect(),
            Kind::Expire => sessions
                .filter(|&s| self.sessions[s].state != Link::Expired && current(self, s))
                .map(Move::Expire)
                .collect(),
            Kind::ForeignData => self.children().into_iter().map(Move::ForeignData).collect(),
            Kind::ForeignRecord => self
                .record_candidates()
                .into_iter()
                .map(Move::ForeignRecord)
                .collect(),
            Kind::ForeignDelete => self.children().into_iter().map(Move::ForeignDelete).collect(),
            Kind::ForeignReplace => self
                .replace_candidates()
                .into_iter()
                .map(Move::ForeignReplace)
                .collect(),
            // A semaphore's: a bare writer twice as often as a name with
            // another permit count or a name that is no contender's.
            Kind::ForeignNode if self.dir.is_some() => {
                vec![
                    Move::ForeignNode(0),
                    Move::ForeignNode(0),
                    Move::ForeignNode(1),
                    Move::ForeignNode(2),
                ]
            }
            Kind::ForeignNode => Vec::new(),
            Kind::TakeRead => (0..self.contenders.len())
                .filter(|&c| {
                    let mine = self.contenders[c]
                        .acq
                        .as_ref()
                        .and_then(|a| a.machine.inner.node());
                    mine.and_then(|mine| self.live.get(mine))
                        .and_then(|z| self.nodes.get(z))
                        .is_some_and(|node| node.denied.is_none() && node.owner.is_some())
                })
                .map(Move::TakeRead)
                .collect(),
            Kind::ForeignMarker => self
                .marker_candidates()
                .into_iter()
                .map(Move::ForeignMarker)
                .chain(self.markers.iter().cloned().map(Move::ForeignUnmarker))
                .collect(),
            Kind::Commit => (0..self.contenders.len())
                .filter(|&c| {
                    let k = &self.contenders[c];
                    k.state == CState::Holding
                        && k.acq.as_ref().is_some_and(|a| a.machine.inner.node().is_some())
                })
                .map(Move::Commit)
                .collect(),
            // ZooKeeper removes a container once it is empty, if it ever had a child.
            Kind::RemoveDir => match &self.dir {
                Some(dir) if dir.container && self.empty() && dir.cversion > 0 => {
                    vec![Move::RemoveDir]
                }
                _ => Vec::new(),
            },
        }
    }

    fn perform(&mut self, m: Move) -> Check {
        match m {
            Move::Deliver(s) => self.deliver(s)?,
            Move::Look(c) => self.look(c),
            Move::Apply(s) => self.apply_next(s),
            Move::Release(c) => self.release(c)?,
            Move::Downgrade(c) => self.downgrade(c)?,
            Move::Observe => self.observe()?,
            Move::Start(c) => {
                let mode = if self.rng.one_in(2) && self.permits.is_none() {
                    Mode::Read
                } else {
                    Mode::Write
                };
                let may_wait = !self.rng.one_in(8);
                let has_deadline = self.rng.one_in(if self.race { 2 } else { 4 });
                self.start(c, mode, may_wait, has_deadline)?;
            }
            Move::Reconnect(s) => self.reconnect(s, Order::Random),
            Move::Deadline(c) => self.deadline(c)?,
            Move::Disconnect(s) => self.disconnect(s, None),
            Move::Expire(s) => self.expire(s),
            Move::ForeignData(name) => self.foreign_data(&name),
            Move::ForeignRecord(data) => self.foreign_record(data),
            Move::ForeignDelete(name) => self.foreign_delete(&name),
            Move::ForeignReplace(name) => self.foreign_replace(&name),
            Move::ForeignMarker(name) => self.foreign_marker(&name),
            Move::ForeignUnmarker(marker) => self.foreign_unmarker(&marker),
            Move::ForeignNode(kind) => self.foreign_node(kind),
            Move::TakeRead(c) => take_read_away(self, c),
            Move::RemoveDir => self.remove_dir(),
            Move::Commit(c) => self.commit(c)?,
        }
        self.stats.steps += 1;
        self.step += 1;
        self.check_safety()
    }

    /// One step of the random part: `choice` picks the kind of move (by
    /// weight, among the kinds with a move enabled), the move, and seeds
    /// the sub-choices. Choice 0 delivers the first message there is.
    fn random_step(&mut self, choice: u32, faults: u8) -> Check {
        self.rng = Rng(u64::from(choice) ^ ((self.step as u64) << 32));
        let f = u32::from(faults);
        let rare = [0, 1, 1, 2][usize::from(faults.min(3))];
        // The downgrade's race made frequent (see `World::race`).
        let race = u32::from(self.race);
        let table = [
            (Kind::Deliver, 30),
            (Kind::Apply, 30),
            (Kind::Look, 6),
            (Kind::Release, 4 - 3 * race),
            (Kind::Downgrade, 2 + 6 * race),
            (Kind::Observe, 3),
            (Kind::Start, 4 + 4 * race),
            (Kind::Reconnect, 6),
            (Kind::Deadline, 1 + 3 * race),
            (Kind::Disconnect, 2 * f),
            (Kind::Expire, rare),
            (Kind::ForeignData, f),
            (Kind::ForeignRecord, f),
            (Kind::ForeignDelete, rare),
            (Kind::ForeignReplace, rare),
            (Kind::ForeignMarker, u32::from(faults >= 2)),
            (Kind::ForeignNode, if self.permits.is_some() { rare } else { 0 }),
            (Kind::TakeRead, u32::from(faults >= 2)),
            (Kind::RemoveDir, 2),
            (Kind::Commit, 2),
        ];
        let mut enabled = Vec::new();
        let mut total = 0;
        for (kind, weight) in table {
            if weight == 0 {
                continue;
            }
            let moves = self.moves(kind);
            if !moves.is_empty() {
                total += weight;
                enabled.push((weight, moves));
            }
        }
        if enabled.is_empty() {
            return Ok(());
        }
        let mut pick = (choice & 0xffff) % total;
        for (weight, moves) in enabled {
            if pick < weight {
                let m = moves[(choice >> 16) as usize % moves.len()].clone();
                return self.perform(m);
            }
            pick -= weight;
        }
        unreachable!("the weights add up")
    }

    /// The end of a schedule: no more faults, deadlines or acquires; the
    /// stranger deletes the nodes it made, sessions reconnect, holders
    /// release. Everything must come to rest, every acquire finished, no
    /// node of a live session left.
    fn drain(&mut self, seed: u64) -> Check {
        note!(self, "drain");
        let strangers: Vec<String> = self
            .live
            .iter()
            .filter(|(_, z)| self.nodes[z].owner.is_none())
            .map(|(name, _)| name.clone())
            .collect();
        for name in strangers {
            self.foreign_delete(&name);
        }
        for marker in self.markers.clone() {
            self.foreign_unmarker(&marker);
        }
        let mut rng = Rng(seed);
        let limit = 2000 + 400 * self.contenders.len();
        let mut steps = 0;
        // First to rest with the holders holding on: no waiter may then
        // be owed a wake-up.
        for (kinds, at_rest) in [
            (&[Kind::Deliver, Kind::Apply, Kind::Reconnect][..], true),
            (
                &[
                    Kind::Deliver,
                    Kind::Apply,
                    Kind::Reconnect,
                    Kind::Release,
                    Kind::Look,
                ][..],
                false,
            ),
        ] {
            loop {
                let mut moves = Vec::new();
                for kind in kinds {
                    moves.extend(self.moves(*kind));
                }
                if moves.is_empty() {
                    break;
                }
                steps += 1;
                if steps > limit {
                    return self.fail(format!("no rest after {limit} steps of the drain"));
                }
                self.rng = Rng(rng.next_u64());
                let m = moves[rng.index(moves.len())].clone();
                self.perform(m)?;
            }
            if at_rest {
                self.check_at_rest()?;
            }
        }
        for c in 0..self.contenders.len() {
            if self.contenders[c].state != CState::Idle {
                return self.fail(format!("c{c} is stuck: {}", self.describe(c)));
            }
        }
        let orphans: Vec<String> = self
            .live
            .iter()
            .filter(|(_, z)| {
                self.nodes[z]
                    .owner
                    .is_some_and(|s| self.sessions[s].state != Link::Expired)
            })
            .map(|(name, _)| name.clone())
            .collect();
        if !orphans.is_empty() {
            return self.fail(format!("nodes of live sessions left behind: {orphans:?}"));
        }
        // Every write of a data node came with a checked commit: the last
        // one recorded for its contender (or none: never written).
        for c in 0..self.contenders.len() {
            let last = self
                .commits
                .iter()
                .rev()
                .find(|(_, d, _)| *d == c)
                .map(|(z, _, _)| *z);
            let written = self.data.get(&data_path(c)).map(|(_, z)| *z).filter(|z| *z > 1);
            if last.is_some() != written.is_some() || written.is_some_and(|z| Some(z) != last) {
                return self.fail(format!(
                    "c{c}'s data node last written at {written:?}, its last checked commit at {last:?}"
                ));
            }
        }
        // The server keeps no watch on a release marker for a wait that is
        // over, nor on any node that does not exist (an `exists` on a
        // semaphore's watched node gone leaves one, which the client drops).
        let left: Vec<(&String, &BTreeSet<usize>)> = self
            .watches
            .iter()
            .filter(|(name, watchers)| !self.live(name) && !watchers.is_empty())
            .collect();
        if !left.is_empty() {
            return self.fail(format!(
                "watches on nodes that do not exist left on the server: {left:?}"
            ));
        }
        // Nor a child watch on a directory that does not exist (its
        // deletion fired them). A listing's child watch may stay, left to
        // fire once its wait is over (as a semaphore's watches linger):
        // the directory's next child made or deleted fires it. So a client
        // keeps one only while the server holds it for the session: none
        // is kept for ever on a directory that keeps changing.
        if self.dir.is_none() && !self.child_watches.is_empty() {
            return self.fail(format!(
                "child watches on a directory that does not exist left on the server: {:?}",
                self.child_watches
            ));
        }
        let unheld: Vec<usize> = (0..self.sessions.len())
            .filter(|&s| self.sessions[s].state != Link::Expired && !self.child_watches.contains(&s))
            .filter(|&s| {
                self.sessions[s]
                    .registry
                    .iter()
                    .any(|k| k.whose == Watch::Listing)
            })
            .collect();
        if !unheld.is_empty() {
            return self.fail(format!(
                "listings' watches kept by clients that the server does not hold (nothing will fire them): sessions {unheld:?}"
            ));
        }
        // Every acquire is over: no client keeps a watch of a wait on its
        // own node or a marker (each is dropped when an exchange replaces
        // it, or when the wait ends), nor a wait's watch on a watched node
        // that is not left to fire (a semaphore's).
        let kept: Vec<(usize, &Kept)> = self
            .sessions
            .iter()
            .enumerate()
            .filter(|(_, session)| session.state != Link::Expired)
            .flat_map(|(s, session)| session.registry.iter().map(move |k| (s, k)))
            .filter(|(_, k)| match k.whose {
                Watch::Own | Watch::Marker => true,
                Watch::Watched | Watch::Listing => !k.detached,
                Watch::Held => false,
            })
            .collect();
        if !kept.is_empty() {
            let shown: Vec<String> = kept
                .iter()
                .map(|(s, k)| format!("session {s}: {:?} watch on {}", k.whose, k.name))
                .collect();
            return self.fail(format!("a wait's watches kept after every wait ended: {shown:?}"));
        }
        Ok(())
    }

    /// The drain's first rest (everything applied and delivered, every
    /// session connected, the holders holding on): no wake-up is owed.
    /// Every acquire under way waits, and one whose node is live waits on
    /// what the directory says it waits on now (a semaphore's: the N
    /// contenders right before it, none of them able to be missing, since
    /// the deletion of a watched node wakes the wait), with the watches set
    /// on the server: it is not owed a grant (no missed wake-up), and
    /// will be woken when that changes.
    fn check_at_rest(&mut self) -> Check {
        let children = self.children();
        for c in 0..self.contenders.len() {
            let k = &self.contenders[c];
            let Some(acq) = k.acq.as_ref() else {
                continue;
            };
            match k.state {
                CState::Holding => continue,
                CState::Acquiring if acq.waiting => {}
                _ => return self.fail(format!("c{c} is not waiting at rest: {}", self.describe(c))),
            }
            let machine = &acq.machine.inner;
            let (Some(me), Some(czxid)) = (machine.node(), machine.czxid()) else {
                return self.fail(format!("c{c} waits at rest with no node: {}", self.describe(c)));
            };
            // A node deleted by a stranger: the next wake-up tells (the
            // holders release next).
            if !self.alive(czxid as u64) {
                continue;
            }
            // A node the wait polls (it may not read it) is looked at, not
            // watched: gone, the next look tells (the holders release next).
            let polled: Vec<&str> = acq.polls.as_ref().map_or(Vec::new(), |polls| {
                polls
                    .polls
                    .iter()
                    .filter_map(|(poll, _)| match poll.request() {
                        Request::Exists { path, .. } => child_of(path),
                        _ => None,
                    })
                    .collect()
            });
            if polled.iter().any(|name| !self.live(name)) {
                continue;
            }
            let expected: BTreeSet<String> = match self.permits {
                Some(permits) => {
                    if permit_holds(me, &children, permits.get()) {
                        return self.fail(format!(
                            "c{c} ({me}) waits at rest, owed a permit (a missed wake-up): {}",
                            self.describe(c)
                        ));
                    }
                    let before = predecessors(me, &children);
                    let near = before.len().saturating_sub(permits.get() as usize);
                    before[near..].iter().map(|(_, name)| name.clone()).collect()
                }
                None => match decide(me, &children) {
                    Ok(Decision::Wait { watch, .. }) => BTreeSet::from([watch.to_owned()]),
                    other => {
                        return self.fail(format!(
                        "c{c} ({me}) waits at rest, the directory deciding {other:?} (a missed wake-up): {}",
                        self.describe(c)
                    ))
                    }
                },
            };
            let s = k.session;
            // A watched node whose watch went unread in my node's
            // `SetWatches` (`blind`), and that this session may not read:
            // the server keeps no watch of it, and is silent of it. The
            // listing's child watch, set on the server, kept by the carrier
            // and not fired, tells of its deletion (then the wait reads
            // it, and polls it).
            let listened = |name: &String| {
                acq.blind
                    && acq.read_watched == 0
                    && self.node(name).is_some_and(|node| self.read_denied(s, node))
                    && self.child_watches.contains(&s)
                    && acq.handles.get(CHILDREN) == Some(&Handle::Pending)
                    && self.sessions[s]
                        .registry
                        .iter()
                        .any(|kept| kept.name == CHILDREN && !kept.detached)
            };
            let unset: Vec<&String> = acq
                .watching
                .iter()
                .filter(|name| !polled.contains(&name.as_str()))
                .filter(|name| !listened(name))
                .filter(|name| {
                    !self.watches.get(*name).is_some_and(|w| w.contains(&s))
                        || !self.sessions[s]
                            .registry
                            .iter()
                            .any(|kept| kept.name == **name && !kept.detached)
                })
                .collect();
            if acq.watching != expected || !unset.is_empty() {
                return self.fail(format!(
                    "c{c} ({me}) waits at rest on {:?} (watches not set: {unset:?}), \
                     where the directory says {expected:?}: {}",
                    acq.watching,
                    self.describe(c)
                ));
            }
            self.stats.waiters_at_rest += 1;
        }
        Ok(())
    }

    fn report(&self, what: &str) -> String {
        const TAIL: usize = 400;
        let skip = self.trace.len().saturating_sub(TAIL);
        let mut out = format!(
            "{what}\n--- trace ({} lines, last {TAIL}) ---\n",
            self.trace.len()
        );
        for line in &self.trace[skip..] {
            out.push_str(line);
            out.push('\n');
        }
        out
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Deliver,
    Look,
    Apply,
    Release,
    Downgrade,
    Observe,
    Start,
    Reconnect,
    Deadline,
    Disconnect,
    Expire,
    ForeignData,
    ForeignRecord,
    ForeignDelete,
    ForeignReplace,
    ForeignMarker,
    ForeignNode,
    TakeRead,
    RemoveDir,
    Commit,
}

#[derive(Debug, Clone)]
enum Move {
    Deliver(usize),
    Look(usize),
    Apply(usize),
    Release(usize),
    Downgrade(usize),
    Observe,
    Start(usize),
    Reconnect(usize),
    Deadline(usize),
    Disconnect(usize),
    Expire(usize),
    ForeignData(String),
    ForeignRecord(String),
    ForeignDelete(String),
    ForeignReplace(String),
    ForeignMarker(String),
    ForeignUnmarker(String),
    /// A stranger's node in a semaphore's directory: 0 a bare writer, 1 a
    /// semaphore's node with another permit count, 2 a name that is no
    /// contender's.
    ForeignNode(u8),
    /// An operator's `setACL` takes READ on this contender's node from its
    /// own session ([`take_read_away`]).
    TakeRead(usize),
    RemoveDir,
    Commit(usize),
}

// ---- schedules -------------------------------------------------------------

/// The lock directory when a schedule starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DirStart {
    /// A container with this ACL (persistent on a server without containers).
    Container(u32),
    /// A persistent directory with this ACL.
    Persistent(u32),
    /// Missing; its parents exist.
    Missing,
    /// Missing, and its parents too.
    NoParents,
}

/// One schedule: how many contenders, where the counter starts, whether
/// one create at the limit gets a negative sequence, how often faults
/// happen (0: never), the directory and its ACL, the drain's seed, and one
/// choice per step.
#[derive(Debug, Clone)]
struct Schedule {
    /// Contenders in every layout (peers never mark), or native only.
    mixed: bool,
    contenders: usize,
    counter: i32,
    negative_once: bool,
    faults: u8,
    dir: DirStart,
    /// The server has containers.
    containers: bool,
    /// Contenders (bits) the directory's ACL denies WRITE: the release
    /// record is refused them.
    restricted: u8,
    /// Contenders (bits) of the version before the release marker.
    old: u8,
    /// The locks check the directory's data first; `foreign_data`: a
    /// stranger wrote data there that is not the lock's.
    check_data: bool,
    foreign_data: bool,
    drain_seed: u64,
    choices: Vec<u32>,
    /// A counting semaphore's with this many permits, every contender a
    /// native writer of it (`semaphore_schedule`); `None`: a read/write
    /// lock's.
    permits: Option<u32>,
}

fn schedule() -> impl Strategy<Value = Schedule> {
    let threshold = RECYCLE_THRESHOLD;
    (
        (
            any::<bool>(),
            3usize..=8,
            prop_oneof![
                4 => Just(0i32),
                1 => (i32::MAX - 40)..=i32::MAX,
                1 => (threshold - 20)..=(threshold + 20),
            ],
            any::<bool>(),
            0u8..=3,
        ),
        (
            prop_oneof![
                4 => Just(DirStart::Container(DIR_ACL)),
                2 => Just(DirStart::Container(OPERATOR_ACL)),
                1 => Just(DirStart::Persistent(OPERATOR_ACL)),
                1 => Just(DirStart::Missing),
                1 => Just(DirStart::NoParents),
            ],
            prop_oneof![4 => Just(true), 1 => Just(false)],
            prop_oneof![2 => Just(0u8), 1 => any::<u8>()],
            any::<bool>(),
            prop_oneof![3 => Just(false), 1 => Just(true)],
            prop_oneof![2 => Just(0u8), 1 => any::<u8>()],
        ),
        any::<u64>(),
        prop::collection::vec(any::<u32>(), 40..320),
    )
        .prop_map(
            |(
                (mixed, contenders, counter, negative_once, faults),
                (dir, containers, restricted, check_data, foreign_data, old),
                drain_seed,
                choices,
            )| Schedule {
                mixed,
                contenders,
                counter,
                negative_once,
                faults,
                dir,
                containers,
                restricted,
                old,
                check_data,
                foreign_data,
                drain_seed,
                choices,
                permits: None,
            },
        )
}

/// A semaphore's schedule: N permits (1 to 4) and 3N or 3N + 1
/// contenders (at least 3), all native writers of the semaphore; the rest
/// as a lock's schedule draws it (its faults, the directory, the counter,
/// its ACLs), which never downgrades.
fn semaphore_schedule() -> impl Strategy<Value = Schedule> {
    (schedule(), 1u32..=4, any::<bool>()).prop_map(|(schedule, permits, one_more)| Schedule {
        mixed: false,
        contenders: (3 * permits as usize + usize::from(one_more)).max(3),
        permits: Some(permits),
        ..schedule
    })
}

impl World {
    /// The world a schedule starts from.
    fn of(schedule: &Schedule, mutation: Mutation) -> World {
        let mut world = World::new(schedule.contenders, schedule.counter, mutation);
        world.permits = schedule.permits.and_then(NonZeroU32::new);
        world.negative_once = schedule.negative_once;
        world.mixed = schedule.mixed;
        // Header, count and stat (88 bytes) and two to four names of about
        // 48 bytes (their length prefix included: 52).
        world.listing_limit = schedule
            .drain_seed
            .is_multiple_of(3)
            .then(|| 88 + 52 * (2 + (schedule.drain_seed / 3 % 3) as usize));
        world.containers = schedule.containers;
        world.restricted = u32::from(schedule.restricted);
        // In a quarter of the schedules, some locks' nodes deny their own
        // identity READ (from the drain's seed: the schedules stay as they
        // were drawn).
        let bits = schedule.drain_seed >> 40;
        world.unreadable = if bits.is_multiple_of(4) {
            (bits >> 2) as u32 & 0xff
        } else {
            0
        };
        // In an eighth, some locks' nodes let only their own identity READ:
        // the waits on them poll.
        let bits = schedule.drain_seed >> 50;
        world.private = if bits.is_multiple_of(8) {
            (bits >> 3) as u32 & 0xff
        } else {
            0
        };
        world.exists_checks_read = (schedule.drain_seed >> 49) & 1 == 1;
        world.old = u32::from(schedule.old);
        world.check_data = schedule.check_data;
        match schedule.dir {
            DirStart::Container(acl) | DirStart::Persistent(acl) => {
                let dir = world.dir.as_mut().expect("a directory");
                dir.acl = acl;
                world.dir_acls.insert(dir.czxid, acl);
                dir.container = schedule.containers && matches!(schedule.dir, DirStart::Container(_));
                if schedule.check_data && schedule.foreign_data {
                    dir.data = "{\"config\": 1}".to_owned();
                    world.dir_history = vec![(1, false)];
                }
            }
            DirStart::Missing => world.dir = None,
            DirStart::NoParents => {
                world.dir = None;
                world.parents = false;
            }
        }
        world
    }
}

/// Runs one schedule, without a trace; the error is the broken check.
fn simulate(schedule: &Schedule, mutation: Mutation) -> Result<Stats, String> {
    let (mut world, result) = run_schedule(schedule, mutation, false);
    result?;
    world.stats.runs = 1;
    Ok(world.stats)
}

/// Runs a schedule that failed again, with the trace on (runs are
/// deterministic): the broken check and the trace.
fn report(schedule: &Schedule, mutation: Mutation) -> String {
    let (world, result) = run_schedule(schedule, mutation, true);
    let what = result
        .err()
        .unwrap_or_else(|| "the run did not fail again".to_owned());
    world.report(&what)
}

fn run_schedule(schedule: &Schedule, mutation: Mutation, tracing: bool) -> (World, Check) {
    let mut world = World::of(schedule, mutation);
    world.tracing = tracing;
    world.race = mutation == Mutation::DowngradeUnchecked;
    let mut run = || -> Check {
        for &choice in &schedule.choices {
            world.random_step(choice, schedule.faults)?;
        }
        world.drain(schedule.drain_seed)
    };
    let result = run();
    (world, result)
}

/// Cases of the main simulation: `SIM_CASES` overrides.
const CASES: u32 = 5000;

/// Shrinking steps for a failing schedule: a minimal one comes within a
/// few hundred, and a schedule that fails by never coming to rest costs
/// a whole drain per step.
const SHRINK_ITERS: u32 = 256;

/// Cases a mutation test may take to find its violation.
const MUTATION_BUDGET: u32 = 300;

/// Cases for the mutations that only a rarer interleaving shows (about
/// one schedule in 300 to 2,000): a lost connection whose reconnection
/// delivers a waiter's own node's deletion after the watched node's, the
/// downgrade's race (with `World::race`), a revocation request written
/// to a waiter's node between its create and its `SetWatches`, a
/// batched `SetWatches` on a node its own ACL keeps from its session, and
/// one sent after a write to the waiter's node was seen.
const RARE_BUDGET: u32 = 5000;

/// The cases a mutation test may take.
fn budget(mutation: Mutation) -> u32 {
    match mutation {
        Mutation::IgnoreInterrupted
        | Mutation::DowngradeUnchecked
        | Mutation::LaterRelative
        | Mutation::TogetherUnreadable
        | Mutation::TogetherWritten
        | Mutation::IgnoreListing => RARE_BUDGET,
        _ => MUTATION_BUDGET,
    }
}

fn cases() -> u32 {
    std::env::var("SIM_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(CASES)
}

static TOTALS: Mutex<Option<Stats>> = Mutex::new(None);

/// Random schedules with the real machine: no check ever fails. Failing
/// schedules are shrunk and kept in `proptest-regressions/simulation.txt`.
#[test]
fn schedules_keep_every_rule() {
    let config = ProptestConfig {
        cases: cases(),
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/simulation.txt",
        ))),
        max_shrink_iters: SHRINK_ITERS,
        ..ProptestConfig::default()
    };
    let mut runner = TestRunner::new(config);
    let result = runner.run(&schedule(), |schedule| {
        let stats = simulate(&schedule, Mutation::None).map_err(TestCaseError::fail)?;
        TOTALS
            .lock()
            .unwrap()
            .get_or_insert_with(Stats::default)
            .add(&stats);
        Ok(())
    });
    match result {
        Ok(()) => {}
        // Shrunk without traces; the minimal schedule is run again with one.
        Err(TestError::Fail(_, schedule)) => panic!(
            "{}\nminimal schedule: {schedule:?}",
            report(&schedule, Mutation::None)
        ),
        Err(e) => panic!("{e}"),
    }
    let totals = TOTALS.lock().unwrap().clone().unwrap_or_default();
    eprintln!("simulation totals: {totals:?}");
    // The schedules reach the interesting paths (the counts are in the
    // tens to thousands; these floors only catch a scheduler that stopped
    // reaching them).
    if totals.runs >= 200 {
        for (what, n) in [
            ("hand-offs", totals.handoffs),
            ("grants after the release record", totals.record_grants),
            ("grants by a release marker", totals.marker_grants),
            ("markers' watches removed", totals.unwatches),
            ("releases refused by a stranger's marker", totals.marker_refused),
            ("grants in a peer's layout", totals.peer_grants),
            ("grants after an own-node check", totals.checked_grants),
            ("waits refused their own node's watch", totals.own_unreadable),
            ("waits that polled", totals.polls),
            ("listings' child watches fired", totals.children_fired),
            ("listings' events taken by a wait", totals.listing_events),
            ("watched nodes' watches set unread", totals.blind),
            ("reads of a watched node set unread", totals.read_watched),
            ("of those, gone", totals.read_watched_gone),
            (
                "polls ended by a look that found the node gone",
                totals.polls_gone,
            ),
            (
                "looks answered NoAuth by a server that checks READ",
                totals.looks_refused,
            ),
            ("Lost", totals.lost),
            ("SessionEnded", totals.session_ended),
            ("Exhausted", totals.exhausted),
            ("DirectoryHoldsData", totals.holds_data),
            ("reports checked", totals.reports),
            ("reports of SessionExpired", totals.reported_expired),
            ("reports of Lost", totals.reported_lost),
            ("gave up", totals.gave_up),
            ("nodes found after a lost create", totals.found_own),
            ("holders told of their loss", totals.held_lost),
            ("releases that found the lock lost", totals.released_lost),
            (
                "releases ended by the session's expiry under way",
                totals.release_expired,
            ),
            ("refused release records", totals.refused_records),
            ("directories made", totals.dirs_made),
            ("parents made", totals.parents_made),
            ("containers refused", totals.no_containers),
            ("directories removed", totals.dirs_removed),
            ("recycles", totals.recycles),
            ("recycles refused", totals.recycles_refused),
            ("downgrades", totals.downgrades),
            (
                "downgrades that checked a reader after the writer",
                totals.downgrades_checked,
            ),
            ("downgrades that kept the writer node", totals.downgrades_kept),
            ("readers granted by a downgrade", totals.downgrade_handoffs),
            ("leaders named by observers", totals.leaders_named),
            ("changes of the leader observed", totals.leader_changes),
        ] {
            assert!(n > 0, "no {what} in {} runs: {totals:?}", totals.runs);
        }
        // The newer rules, checked often: floors about a tenth of what
        // 5,000 runs see (per run: about 11 places checked, 5 of them of a
        // wait, 1.2 transactions committed, 0.26 refused, 0.08 passed by a
        // stranger's node), so that 200 runs clear them by far.
        for (what, n, per) in [
            ("places checked", totals.places_checked, 1),
            ("places of a wait checked", totals.places_waiting, 2),
            ("transactions committed", totals.txs_committed, 8),
            ("transactions refused", totals.txs_refused, 40),
            ("transactions' answers read", totals.txs_answered, 8),
            (
                "transactions not sent (the lock known lost)",
                totals.txs_unsent,
                40,
            ),
            ("transactions passed by a stranger's node", totals.txs_forged, 200),
            // About one wait in eight runs sets its own node's and the
            // marker's watches in one SetWatches (0.12 per run).
            ("waits whose watches went in one SetWatches", totals.batched, 40),
        ] {
            assert!(
                n * per >= totals.runs,
                "{n} {what} in {} runs (the floor: one in {per} runs): {totals:?}",
                totals.runs
            );
        }
        // Rarest: a read of a watched node set unread that the server
        // refuses (about one in 2,500 runs, none in many runs of 5,000) is
        // not floored here: `unread_watched_node` with
        // `Leaves::AfterAStranger` reaches it every time.
        // Rarer: a SetWatches that fires at once (my node written or gone
        // since its create, about one run in 180). Floored by whole
        // thousands of runs beyond the first two (none at 1,000 runs or
        // fewer, where the count may be as low as 0; 3 at 5,000).
        let floor = totals.runs.saturating_sub(2000) / 1000;
        assert!(
            totals.set_watches_fired >= floor,
            "{} SetWatches that fired at once in {} runs (the floor: {floor}): {totals:?}",
            totals.set_watches_fired,
            totals.runs
        );
    }
}

/// Cases of the semaphore's simulation: `SIM_SEMAPHORE_CASES` overrides.
const SEMAPHORE_CASES: u32 = 1000;

/// A counting semaphore's schedules (`semaphore_schedule`) with the real
/// machine: never more than N hold, no waiter is owed a wake-up at rest
/// and all are granted once the holders release, no deletion wakes more
/// than N, nothing is left behind. Failing schedules are shrunk and kept
/// in `proptest-regressions/simulation_semaphore.txt`.
#[test]
fn semaphore_schedules_hold_n_permits_with_no_missed_wakeup_and_no_herd() {
    let config = ProptestConfig {
        cases: std::env::var("SIM_SEMAPHORE_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(SEMAPHORE_CASES),
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "proptest-regressions/simulation_semaphore.txt",
        ))),
        max_shrink_iters: SHRINK_ITERS,
        ..ProptestConfig::default()
    };
    let totals = Mutex::new(Stats::default());
    let mut runner = TestRunner::new(config);
    let result = runner.run(&semaphore_schedule(), |schedule| {
        let stats = simulate(&schedule, Mutation::None).map_err(TestCaseError::fail)?;
        totals.lock().unwrap().add(&stats);
        Ok(())
    });
    match result {
        Ok(()) => {}
        Err(TestError::Fail(_, schedule)) => panic!(
            "{}\nminimal schedule: {schedule:?}",
            report(&schedule, Mutation::None)
        ),
        Err(e) => panic!("{e}"),
    }
    let totals = totals.into_inner().unwrap();
    eprintln!("semaphore simulation totals: {totals:?}");
    // The schedules reach the semaphore's paths (floors only catch a
    // scheduler that stopped reaching them).
    if totals.runs >= 200 {
        for (what, n) in [
            ("permits granted", totals.permit_grants),
            ("permits handed off by a deletion", totals.permit_handoffs),
            ("waits on several nodes", totals.several_watched),
            ("other watched nodes found gone", totals.also_gone),
            ("deletions of watched nodes", totals.watchers_at_deletion),
            ("deletions that woke N waiters", totals.herd_full),
            ("PermitsDisagree", totals.permits_disagree),
            ("strangers' nodes", totals.foreign_nodes),
            ("waiters checked at rest", totals.waiters_at_rest),
            ("waits that polled", totals.polls),
            (
                "polls ended by a look that found the node gone",
                totals.polls_gone,
            ),
            ("Lost", totals.lost),
            ("SessionEnded", totals.session_ended),
            ("gave up", totals.gave_up),
            ("holders told of their loss", totals.held_lost),
            ("transactions committed", totals.txs_committed),
        ] {
            assert!(n > 0, "no {what} in {} runs: {totals:?}", totals.runs);
        }
    }
}

/// Runs schedules from a fixed seed with a broken machine; returns the
/// number of the first case that broke a check, and its report.
fn hunt(mutation: Mutation) -> Option<(u32, String)> {
    let config = ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    let mut runner = TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    // A semaphore's rule is broken on a semaphore's schedules.
    let strategy = match mutation {
        Mutation::PermitWatchesOne | Mutation::PermitWatchesHead => semaphore_schedule().boxed(),
        _ => schedule().boxed(),
    };
    for case in 1..=budget(mutation) {
        let schedule = strategy.new_tree(&mut runner).expect("a schedule").current();
        if simulate(&schedule, mutation).is_err() {
            return Some((case, report(&schedule, mutation)));
        }
    }
    None
}

fn assert_caught(mutation: Mutation) {
    match hunt(mutation) {
        Some((case, report)) => {
            // `SIM_SHOW=1` shows the whole report.
            let shown = match std::env::var_os("SIM_SHOW") {
                Some(_) => report.as_str(),
                None => report.lines().next().unwrap_or_default(),
            };
            eprintln!("{mutation:?} caught at case {case}: {shown}");
        }
        None => panic!("{mutation:?} went unnoticed in {} cases", budget(mutation)),
    }
}

#[test]
fn mutation_own_unreadable_watched_is_caught() {
    assert_caught(Mutation::OwnUnreadableWatched);
}

#[test]
fn mutation_downgrade_unchecked_is_caught() {
    assert_caught(Mutation::DowngradeUnchecked);
}

/// Two one-line mutations of `acquire.rs` that no faithful model of the
/// server, the client and the carrier tells from the real machine (see the
/// module documentation); the unit tests in `acquire/tests.rs` pin them.
/// Ignored: it shows that they pass here, and must.
#[test]
#[ignore = "they go unnoticed by design: cargo test --test simulation -- --ignored"]
fn mutations_no_faithful_model_tells_apart() {
    for mutation in [Mutation::MarkerExisting, Mutation::RecordWithoutOwn] {
        if let Some((case, report)) = hunt(mutation) {
            panic!("{mutation:?} caught at case {case}: {report}");
        }
    }
}

#[test]
fn mutation_observer_names_head_is_caught() {
    assert_caught(Mutation::ObserverNamesHead);
}

#[test]
fn mutation_downgrade_behind_writer_is_caught() {
    assert_caught(Mutation::DowngradeBehindWriter);
}

#[test]
fn mutation_data_change_grants_is_caught() {
    assert_caught(Mutation::DataChangeGrants);
}

#[test]
fn mutation_skip_own_check_is_caught() {
    assert_caught(Mutation::SkipOwnCheck);
}

#[test]
fn mutation_ignore_interrupted_is_caught() {
    assert_caught(Mutation::IgnoreInterrupted);
}

#[test]
fn mutation_any_record_is_caught() {
    assert_caught(Mutation::AnyRecord);
}

#[test]
fn mutation_writer_granted_at_wait_is_caught() {
    assert_caught(Mutation::WriterGrantedAtWait);
}

#[test]
fn mutation_ignore_own_deletion_is_caught() {
    assert_caught(Mutation::IgnoreOwnDeletion);
}

#[test]
fn mutation_find_own_any_session_is_caught() {
    assert_caught(Mutation::FindOwnAnySession);
}

#[test]
fn mutation_release_without_record_is_caught() {
    assert_caught(Mutation::ReleaseWithoutRecord);
}

#[test]
fn mutation_recycle_unread_is_caught() {
    assert_caught(Mutation::RecycleUnread);
}

#[test]
fn mutation_refused_record_orphan_is_caught() {
    assert_caught(Mutation::RefusedRecordOrphan);
}

#[test]
fn mutation_deletion_marks_is_caught() {
    assert_caught(Mutation::DeletionMarks);
}

#[test]
fn mutation_keep_marker_watch_is_caught() {
    assert_caught(Mutation::KeepMarkerWatch);
}

#[test]
fn mutation_ignore_held_deletion_is_caught() {
    assert_caught(Mutation::IgnoreHeldDeletion);
}

#[test]
fn mutation_together_unreadable_is_caught() {
    assert_caught(Mutation::TogetherUnreadable);
}

#[test]
fn mutation_together_written_is_caught() {
    assert_caught(Mutation::TogetherWritten);
}

#[test]
fn mutation_later_relative_is_caught() {
    assert_caught(Mutation::LaterRelative);
}

/// A semaphore's waiter that watches its immediate predecessor only is
/// owed a wake-up when a farther one leaves.
#[test]
fn mutation_ignore_listing_is_caught() {
    assert_caught(Mutation::IgnoreListing);
}

#[test]
fn mutation_permit_watching_one_predecessor_misses_a_wakeup() {
    assert_caught(Mutation::PermitWatchesOne);
}

/// A semaphore's waiter that watches the N contenders nearest the head
/// makes a herd: every waiter behind them watches them.
#[test]
fn mutation_permit_watching_the_head_makes_a_herd() {
    assert_caught(Mutation::PermitWatchesHead);
}

// ---- scenarios -------------------------------------------------------------

impl World {
    /// Applies and delivers everything there is, in a fixed order; sessions
    /// stay as they are (a disconnected one only gets its local messages).
    fn settle(&mut self) -> Check {
        self.settle_but(None)
    }

    /// As [`World::settle`], the requests of session `held` (if any) left
    /// in flight.
    fn settle_but(&mut self, held: Option<usize>) -> Check {
        let other = |m: &Move| !matches!(m, Move::Apply(s) if Some(*s) == held);
        for _ in 0..10_000 {
            let m = match self.moves(Kind::Apply).into_iter().find(other) {
                Some(m) => m,
                None => match self.moves(Kind::Deliver).into_iter().next() {
                    Some(m) => m,
                    None => return Ok(()),
                },
            };
            self.perform(m)?;
        }
        self.fail("no rest after 10,000 steps".to_owned())
    }

    fn name(&self, c: usize) -> String {
        self.machine(c).node().expect("a node").to_owned()
    }

    fn holding(&self, c: usize) -> bool {
        self.contenders[c].state == CState::Holding
    }

    /// Waiting on `watched`'s node.
    fn waits_on(&self, c: usize, watched: usize) -> bool {
        self.waits_on_node(c, &self.name(watched))
    }

    /// Waiting on the node `name` (its contender may be done with it).
    fn waits_on_node(&self, c: usize, name: &str) -> bool {
        let acq = self.contenders[c].acq.as_ref();
        acq.is_some_and(|a| a.waiting && a.watching.contains(name))
    }

    fn last_outcome(&self, c: usize) -> Option<Outcome> {
        self.contenders[c].outcomes.last().copied()
    }

    fn run(&mut self, script: impl FnOnce(&mut World) -> Check) -> Check {
        script(self).map_err(|what| self.report(&what))
    }
}

fn scenario(
    mutation: Mutation,
    contenders: usize,
    counter: i32,
    script: impl FnOnce(&mut World) -> Check,
) -> Check {
    let mut world = World::new(contenders, counter, mutation);
    world.run(script)
}

/// READ on contender `c`'s node is taken from its own session (an
/// operator's `setACL`): its reads of it say `NoAuth` from now on, and its
/// watches on it stay silent.
fn take_read_away(w: &mut World, c: usize) {
    let mine = w.name(c);
    note!(w, "an operator takes READ on {mine} from c{c}");
    w.stats.read_taken += 1;
    let czxid = w.live[&mine];
    if let Some(node) = w.nodes.get_mut(&czxid) {
        node.denied = Some(c);
    }
}

/// True if session `s` has a `SetWatches` request in flight.
fn sends_set_watches(w: &World, s: usize) -> bool {
    w.sessions[s]
        .inflight
        .iter()
        .any(|(_, op)| op.shown().starts_with("SetWatches"))
}

/// A stranger deletes the node of `victim`, which waits behind `next`;
/// `first` releases and hands off to `next`, which releases too: `victim`
/// must fail `Lost`, not be granted on `next`'s release with its node gone.
fn a_waiter_whose_node_is_deleted_fails_lost(
    w: &mut World,
    victim: usize,
    first: usize,
    next: usize,
) -> Check {
    let mine = w.name(victim);
    w.foreign_delete(&mine);
    w.release(first)?;
    w.settle()?;
    expect(w.holding(next), &format!("c{next} holds"))?;
    w.release(next)?;
    w.settle()?;
    expect(
        w.last_outcome(victim) == Some(Outcome::Failed(Failure::Lost)),
        &format!("c{victim} fails with Lost"),
    )
}

/// A stranger deletes the node of `victim`, which waits; `holder`
/// releases: `victim` must fail `Lost`, not be granted with its node gone.
fn deleted_while_waiting_fails_lost(w: &mut World, victim: usize, holder: usize) -> Check {
    let mine = w.name(victim);
    w.foreign_delete(&mine);
    w.release(holder)?;
    w.settle()?;
    expect(
        w.last_outcome(victim) == Some(Outcome::Failed(Failure::Lost)),
        &format!("c{victim} fails with Lost"),
    )
}

fn expect(cond: bool, what: &str) -> Check {
    if cond {
        Ok(())
    } else {
        Err(format!("expected: {what}"))
    }
}

/// A writer waits on a writer that holds; while its connection is lost, a
/// stranger deletes its node and the holder releases; the reconnection
/// delivers the watched node's deletion first, its own node's last. It
/// must not take the lock: `Interrupted` makes it ask whether its node
/// exists, and it fails with `Lost`.
fn reconnect_own_deletion_last(mutation: Mutation) -> Check {
    scenario(mutation, 2, 0, |w| {
        w.start(0, Mode::Write, true, false)?;
        w.settle()?;
        w.start(1, Mode::Write, true, false)?;
        w.settle()?;
        expect(w.holding(0) && w.waits_on(1, 0), "c0 holds, c1 waits on it")?;
        let s1 = w.contenders[1].session;
        w.disconnect(s1, Some(0));
        let mine = w.name(1);
        w.foreign_delete(&mine);
        w.release(0)?;
        w.settle()?;
        w.reconnect(s1, Order::OwnLast);
        w.settle()?;
        expect(
            w.last_outcome(1) == Some(Outcome::Failed(Failure::Lost)),
            "c1 fails with Lost",
        )?;
        w.drain(1)
    })
}

#[test]
fn scenario_reconnect_delivers_own_deletion_after_watched_deletion() {
    reconnect_own_deletion_last(Mutation::None).unwrap();
    for broken in [Mutation::IgnoreInterrupted, Mutation::SkipOwnCheck] {
        let report = reconnect_own_deletion_last(broken).unwrap_err();
        assert!(report.contains("when its node"), "{broken:?}: {report}");
    }
}

/// A stranger writes to the node a waiter watches: it watches again, and
/// is granted only once the holder releases.
fn stray_data_on_watched(mutation: Mutation) -> Check {
    scenario(mutation, 2, 0, |w| {
        w.start(0, Mode::Write, true, false)?;
        w.settle()?;
        w.start(1, Mode::Read, true, false)?;
        w.settle()?;
        expect(w.holding(0) && w.waits_on(1, 0), "c0 holds, c1 waits on it")?;
        let held = w.name(0);
        w.foreign_data(&held);
        w.settle()?;
        expect(w.waits_on(1, 0), "c1 waits on c0 again")?;
        w.release(0)?;
        w.settle()?;
        expect(w.holding(1), "c1 holds")?;
        w.drain(1)
    })
}

#[test]
fn scenario_stray_set_data_on_the_watched_node() {
    stray_data_on_watched(Mutation::None).unwrap();
    let report = stray_data_on_watched(Mutation::DataChangeGrants).unwrap_err();
    assert!(report.contains("said Ok(Wait"), "{report}");
}

/// A stranger deletes a waiter's node while the holder holds: the waiter
/// fails with `Lost` at once; the writer behind it waits on the holder.
fn foreign_delete_of_waiter(mutation: Mutation) -> Check {
    scenario(mutation, 3, 0, |w| {
        w.start(0, Mode::Write, true, false)?;
        w.settle()?;
        w.start(1, Mode::Read, true, false)?;
        w.settle()?;
        w.start(2, Mode::Write, true, false)?;
        w.settle()?;
        expect(w.waits_on(1, 0) && w.waits_on(2, 1), "c1 waits on c0, c2 on c1")?;
        let waiter = w.name(1);
        w.foreign_delete(&waiter);
        w.settle()?;
        if mutation == Mutation::None {
            expect(
                w.last_outcome(1) == Some(Outcome::Failed(Failure::Lost)),
                "c1 fails with Lost at once",
            )?;
            expect(w.holding(0) && w.waits_on(2, 0), "c0 holds, c2 waits on it")?;
        }
        w.release(0)?;
        w.settle()?;
        expect(w.holding(2), "c2 holds")?;
        w.drain(1)
    })
}

#[test]
fn scenario_foreign_delete_of_a_waiter_while_the_holder_holds() {
    foreign_delete_of_waiter(Mutation::None).unwrap();
    let report = foreign_delete_of_waiter(Mutation::IgnoreOwnDeletion).unwrap_err();
    assert!(report.contains("when its node"), "{report}");
}

/// The holder's session expires: its node goes, the waiter behind it
/// takes the lock; the old holder's machine says lost, it is no holder any
/// more, and it acquires again in a new session.
#[test]
fn scenario_an_expired_holder() {
    scenario(Mutation::None, 2, 0, |w| {
        w.start(0, Mode::Write, true, false)?;
        w.settle()?;
        w.start(1, Mode::Write, true, false)?;
        w.settle()?;
        expect(w.holding(0) && w.waits_on(1, 0), "c0 holds, c1 waits on it")?;
        let s0 = w.contenders[0].session;
        w.expire(s0);
        w.settle()?;
        expect(w.holding(1), "c1 holds")?;
        expect(w.machine(0).is_lost(), "c0's machine says lost")?;
        expect(
            w.holders().iter().map(|h| h.0).collect::<Vec<_>>() == [1],
            "c1 is the only holder",
        )?;
        w.release(0)?;
        w.settle()?;
        expect(
            w.last_outcome(0) == Some(Outcome::Released(Ended::SessionEnded)),
            "c0's release ends with the session",
        )?;
        w.start(0, Mode::Read, true, false)?;
        w.settle()?;
        expect(
            w.contenders[0].session != s0 && w.waits_on(0, 1),
            "c0 waits on c1 in a new session",
        )?;
        w.drain(1)
    })
    .unwrap();
}

/// A semaphore's world of `contenders`, with `permits` permits.
fn semaphore_scenario(
    mutation: Mutation,
    contenders: usize,
    permits: u32,
    script: impl FnOnce(&mut World) -> Check,
) -> Check {
    let mut world = World::new(contenders, 0, mutation);
    world.permits = NonZeroU32::new(permits);
    world.run(script)
}

/// Two permits: c0 and c1 hold, c2 waits on both. The farther one, c0,
/// releases first: c2 takes the permit from that deletion (exactly two
/// before it: a hand-off, no new listing). Watching its immediate
/// predecessor only, it would miss that wake-up.
fn permit_farther_release(mutation: Mutation) -> Check {
    semaphore_scenario(mutation, 3, 2, |w| {
        for c in 0..2 {
            w.start(c, Mode::Write, true, false)?;
            w.settle()?;
        }
        w.start(2, Mode::Write, true, false)?;
        w.settle()?;
        expect(w.holding(0) && w.holding(1), "c0 and c1 hold")?;
        expect(w.waits_on(2, 1), "c2 waits on c1")?;
        expect(w.waits_on(2, 0), "c2 waits on c0")?;
        w.release(0)?;
        w.settle()?;
        expect(w.holding(2), "c2 holds once c0 released")?;
        expect(
            w.machine(2).counts().handoff,
            "c2 took c0's deletion as its grant",
        )?;
        w.drain(1)
    })
}

#[test]
fn scenario_a_permit_waiter_wakes_when_its_farther_predecessor_leaves() {
    permit_farther_release(Mutation::None).unwrap();
    let report = permit_farther_release(Mutation::PermitWatchesOne).unwrap_err();
    assert!(report.contains("expected: c2 waits on c0"), "{report}");
}

/// Two permits: c0 and c1 hold; c2's watches are under way (on its own
/// node, on c1, then on c0) when a stranger writes to c1, after
/// c1's watch was set and before c0's answer: the event comes before the
/// exchange is complete. The carrier keeps it for the wait, as the
/// library's driver does (the machine takes no watched node's event
/// while a request is in flight, `Arrived`): the wait lists again and
/// watches c1 again, so that c1's release wakes it.
#[test]
fn scenario_a_data_change_before_a_permits_watches_are_all_set_is_kept_for_the_wait() {
    semaphore_scenario(Mutation::None, 3, 2, |w| {
        for c in 0..2 {
            w.start(c, Mode::Write, true, false)?;
            w.settle()?;
        }
        w.start(2, Mode::Write, true, false)?;
        let s2 = w.contenders[2].session;
        for _ in 0..20 {
            if w.contenders[2]
                .acq
                .as_ref()
                .is_some_and(|a| a.last == "SetWatches")
            {
                break;
            }
            w.apply_next(s2);
            while !w.sessions[s2].outbound.is_empty() {
                w.deliver(s2)?;
            }
        }
        let c1 = w.name(1);
        let sent: Vec<String> = w.sessions[s2].inflight.iter().map(|(_, op)| op.shown()).collect();
        expect(
            sent.len() == 3 && sent[1].contains(&c1),
            "c2 sent its own node's watch, c1's, then c0's",
        )?;
        w.apply_next(s2);
        w.apply_next(s2);
        w.foreign_data(&c1);
        while !w.sessions[s2].outbound.is_empty() {
            w.deliver(s2)?;
        }
        expect(
            w.contenders[2]
                .acq
                .as_ref()
                .is_some_and(|a| matches!(a.handles.get(&c1), Some(Handle::Fired(..)))),
            "c2's carrier holds c1's event (its watch fired) for the wait",
        )?;
        w.settle()?;
        expect(w.waits_on(2, 0) && w.waits_on(2, 1), "c2 waits on c0 and c1")?;
        expect(
            w.watches.get(&c1).is_some_and(|watchers| watchers.contains(&s2)),
            "c2's watch on c1 is set again",
        )?;
        w.release(1)?;
        w.settle()?;
        expect(w.holding(2), "c2 holds once c1 released")?;
        w.drain(1)
    })
    .unwrap();
}

/// Two permits: c0 holds all along. c2 waits on c0 and c1, and is granted
/// when c1 releases; c3, behind it, then waits on c0 and c2, and is granted
/// when c2 releases; c4 then waits on c0 and c3. Their watches on c0
/// linger once their waits are over (`wire::Exchange::lingers`): c0's
/// release notifies c2 (idle), c3 (holding) and c4, three sessions with
/// two permits. Only c4 waits on c0 (the herd's bound, checked at the
/// deletion): the other two ignore the event, and c4 takes the permit.
#[test]
fn scenario_a_long_held_permit_is_watched_by_every_wait_on_it() {
    semaphore_scenario(Mutation::None, 5, 2, |w| {
        for c in 0..4 {
            w.start(c, Mode::Write, true, false)?;
            w.settle()?;
        }
        w.release(1)?;
        w.settle()?;
        expect(w.holding(2) && w.waits_on(3, 0), "c2 holds, c3 waits on c0")?;
        w.release(2)?;
        w.settle()?;
        expect(w.holding(3), "c3 holds")?;
        w.start(4, Mode::Write, true, false)?;
        w.settle()?;
        expect(w.waits_on(4, 0) && w.waits_on(4, 3), "c4 waits on c0 and c3")?;
        let c0 = w.name(0);
        let owner = w.contenders[0].session;
        let watchers: BTreeSet<usize> = w
            .watches
            .get(&c0)
            .into_iter()
            .flatten()
            .filter(|s| **s != owner)
            .map(|s| w.sessions[*s].contender)
            .collect();
        expect(
            watchers == BTreeSet::from([2, 3, 4]),
            "c2, c3 and c4 watch c0 on the server",
        )?;
        let (notified, ignored) = (w.stats.over_n_notified, w.stats.lingered_events);
        w.release(0)?;
        w.settle()?;
        expect(
            w.stats.over_n_notified == notified + 1,
            "c0's deletion notifies more than two",
        )?;
        expect(w.stats.lingered_events == ignored + 2, "c2 and c3 ignore it")?;
        expect(w.holding(4), "c4 holds")?;
        w.drain(1)
    })
    .unwrap();
}

/// Two permits: c0 holds; a stranger's node that carries three permits
/// comes next. c1, behind it, is refused (`PermitsDisagree`, naming it)
/// and withdraws its node; c0 holds on.
#[test]
fn scenario_a_predecessor_with_another_permit_count_is_refused() {
    semaphore_scenario(Mutation::None, 2, 2, |w| {
        w.start(0, Mode::Write, true, false)?;
        w.settle()?;
        w.foreign_node(1);
        w.start(1, Mode::Write, true, false)?;
        w.settle()?;
        expect(
            w.last_outcome(1) == Some(Outcome::Failed(Failure::PermitsDisagree)),
            "c1 fails with PermitsDisagree",
        )?;
        expect(w.holding(0), "c0 holds")?;
        let left: Vec<&String> = w.live.keys().filter(|n| n.starts_with("c1@")).collect();
        expect(left.is_empty(), "c1's node is withdrawn")?;
        w.drain(1)
    })
    .unwrap();
}

/// The counter starts two short of its limit: the first two contenders
/// get valid sequences; the third gets 2147483647 (the counter sticks), the
/// fourth a negative one, the fifth 2147483647 again: all three withdraw
/// with `Exhausted` (the directory is not empty: it stays), and the first
/// two are not disturbed.
#[test]
fn scenario_the_counter_at_its_limit() {
    scenario(Mutation::None, 5, i32::MAX - 2, |w| {
        w.start(0, Mode::Read, true, false)?;
        w.settle()?;
        w.start(1, Mode::Write, true, false)?;
        w.settle()?;
        expect(w.holding(0) && w.waits_on(1, 0), "c0 holds, c1 waits on it")?;
        for (c, negative) in [(2, false), (3, true), (4, false)] {
            w.negative_once = negative;
            w.start(c, Mode::Read, true, false)?;
            w.settle()?;
            expect(
                w.last_outcome(c) == Some(Outcome::Failed(Failure::Exhausted)),
                "Exhausted at the limit",
            )?;
        }
        let seqs: Vec<i32> = w.nodes.values().map(|n| n.seq).collect();
        expect(
            seqs.contains(&i32::MIN) && seqs.iter().filter(|s| **s == i32::MAX).count() == 2,
            "two nodes at the limit and a negative one",
        )?;
        expect(w.children().len() == 2, "the exhausted nodes are withdrawn")?;
        expect(w.stats.recycles == 0, "the directory is not recycled")?;
        w.release(0)?;
        w.settle()?;
        expect(w.holding(1), "c1 holds")?;
        w.drain(1)
    })
    .unwrap();
}

/// The bug the simulation found (see the module documentation): a writer waits on a
/// reader that holds. Between the answers of its `SetWatches { own: true }`
/// a stranger writes to its node (the own watch fires: `Own(DataChanged)`,
/// fed with `Contender::event`), then deletes it (no watch left: no event);
/// the reader releases; the watched node's `getData` answers `NoNode`, and
/// with `deletion_grants` the machine hands the lock over, as its own watch
/// is "set" again. It must list again instead, and fail with `Lost`.
#[test]
fn own_watch_fired_while_setting_watches() {
    scenario(Mutation::None, 2, 0, |w| {
        w.start(0, Mode::Read, true, false)?;
        w.settle()?;
        w.start(1, Mode::Write, true, false)?;
        let s1 = w.contenders[1].session;
        // The create and the listing: SetWatches { own: true, watched: c0 }.
        w.apply_next(s1);
        w.apply_next(s1);
        w.deliver(s1)?;
        w.deliver(s1)?;
        // The own watch is set and answered; the watched node's is not yet.
        w.apply_next(s1);
        w.deliver(s1)?;
        let mine = w.name(1);
        w.foreign_data(&mine);
        w.deliver(s1)?;
        w.foreign_delete(&mine);
        w.release(0)?;
        w.settle()?;
        expect(
            w.last_outcome(1) == Some(Outcome::Failed(Failure::Lost)),
            "c1 fails with Lost",
        )?;
        w.drain(1)
    })
    .unwrap();
}

/// A writer waits behind a reader and is granted with the mark; it
/// releases with the release record, which names its node.
fn marked_release(mutation: Mutation, restricted: bool) -> Check {
    scenario(mutation, 2, 0, |w| {
        if restricted {
            w.restricted = 0b10;
        }
        w.start(0, Mode::Read, true, false)?;
        w.settle()?;
        w.start(1, Mode::Write, true, false)?;
        w.settle()?;
        expect(w.holding(0) && w.waits_on(1, 0), "c0 holds, c1 waits on it")?;
        w.release(0)?;
        w.settle()?;
        let acq = w.contenders[1].acq.as_ref();
        expect(
            w.holding(1) && acq.is_some_and(|a| a.mark),
            "c1 holds, with the mark",
        )?;
        let held = w.name(1);
        w.release(1)?;
        w.settle()?;
        expect(
            w.last_outcome(1) == Some(Outcome::Released(Ended::Deleted)),
            "c1's release deletes its node",
        )?;
        expect(w.children().is_empty(), "no node left")?;
        let data = w.dir.as_ref().map(|d| d.data.clone());
        if restricted {
            expect(w.stats.refused_records == 1, "the record is refused")?;
            expect(data.as_deref() == Some(""), "no record")?;
        } else {
            expect(data == Some(held), "the record names c1's node")?;
        }
        w.drain(1)
    })
}

#[test]
fn scenario_a_marked_release_writes_the_record() {
    marked_release(Mutation::None, false).unwrap();
    let report = marked_release(Mutation::ReleaseWithoutRecord, false).unwrap_err();
    assert!(report.contains("without the release record"), "{report}");
}

/// Three writers in a chain: c2 waits on c1, which waits on c0. c0's
/// release grants c1 (its deletion alone does); c1's release creates its
/// marker, which grants c2 with no read. Or c1 gives up instead: c2 sees a
/// deletion with no marker, reads the record, lists again and waits on
/// c0; the marker's watch is dropped, and none is left on the server.
fn marker_chain(mutation: Mutation, give_up: bool) -> Check {
    scenario(mutation, 3, 0, |w| {
        w.start(0, Mode::Write, true, false)?;
        w.settle()?;
        w.start(1, Mode::Write, true, true)?;
        w.settle()?;
        w.start(2, Mode::Write, true, false)?;
        w.settle()?;
        expect(w.holding(0) && w.waits_on(1, 0) && w.waits_on(2, 1), "a chain")?;
        let marker = release_marker(&w.name(1));
        expect(
            w.watches.get(&marker).is_some_and(|s| s.len() == 1),
            "c2 watches c1's marker",
        )?;
        if give_up {
            w.deadline(1)?;
            w.settle()?;
            expect(w.waits_on(2, 0), "c2 waits on c0 now")?;
            expect(w.stats.unwatches == 1, "c2 dropped the marker's watch")?;
            expect(
                w.watches.get(&marker).is_none_or(BTreeSet::is_empty),
                "no watch left on the marker",
            )?;
            expect(w.holding(0) && !w.holding(2), "c0 alone holds")?;
        } else {
            w.release(0)?;
            w.settle()?;
            expect(w.holding(1), "c1 holds")?;
            w.release(1)?;
            w.settle()?;
            expect(w.holding(2), "c2 holds")?;
            expect(w.stats.marker_grants == 1, "granted by the marker")?;
            let last = w.contenders[2].acq.as_ref().map(|a| a.last);
            expect(last == Some("Wait"), "with no request after the event")?;
        }
        w.drain(1)
    })
}

#[test]
fn scenario_a_release_marker_grants_with_no_read() {
    marker_chain(Mutation::None, false).unwrap();
}

#[test]
fn scenario_a_waiter_that_gives_up_creates_no_marker() {
    marker_chain(Mutation::None, true).unwrap();
    let report = marker_chain(Mutation::DeletionMarks, true).unwrap_err();
    assert!(report.contains("granted"), "{report}");
    let report = marker_chain(Mutation::KeepMarkerWatch, true).unwrap_err();
    assert!(report.contains("keeps the watch on the marker"), "{report}");
}

/// The same, the directory's ACL denying the writer WRITE: the record's
/// transaction is refused, and a plain deletion releases.
#[test]
fn scenario_a_refused_record_falls_back_to_a_plain_deletion() {
    marked_release(Mutation::None, true).unwrap();
    let report = marked_release(Mutation::RefusedRecordOrphan, true).unwrap_err();
    assert!(report.contains("ended Deleted, leaving"), "{report}");
}

/// The counter starts at the recycling threshold, the directory with an
/// operator's ACL: the first release leaves a holder (the directory
/// stays), the second an empty directory, recycled with the ACL read back:
/// persistent, its counter from 0.
fn recycling(mutation: Mutation) -> Check {
    scenario(mutation, 2, RECYCLE_THRESHOLD, |w| {
        w.dir.as_mut().expect("a directory").acl = OPERATOR_ACL;
        w.dir_acls.insert(1, OPERATOR_ACL);
        w.start(0, Mode::Write, true, false)?;
        w.settle()?;
        w.start(1, Mode::Read, true, false)?;
        w.settle()?;
        expect(w.holding(0) && w.waits_on(1, 0), "c0 holds, c1 waits on it")?;
        w.release(0)?;
        w.settle()?;
        expect(w.holding(1) && w.stats.recycles == 0, "c1 holds: no recycling")?;
        w.release(1)?;
        w.settle()?;
        expect(w.stats.recycles == 1, "recycled once empty")?;
        let dir = w.dir.as_ref().expect("a directory");
        expect(
            dir.acl == OPERATOR_ACL && dir.cversion == 0 && !dir.container,
            "the same ACL, persistent, its counter from 0",
        )?;
        w.start(0, Mode::Write, true, false)?;
        w.settle()?;
        expect(w.machine(0).seq() == Some(0), "the next node is the 0th")?;
        w.drain(1)
    })
}

#[test]
fn scenario_recycling_keeps_the_directorys_acl() {
    recycling(Mutation::None).unwrap();
    let report = recycling(Mutation::RecycleUnread).unwrap_err();
    assert!(report.contains("recycled the directory with ACL 0"), "{report}");
}

/// The recycle's deletion carries the version read with the ACL, which a
/// directory made again has too (0, no data written): between the ACL's
/// read and the recycle, the server removes the empty container and another
/// contender makes it again (with the lock's ACL, not the operator's); the
/// recycle replaces that directory, with the ACL read from the one before.
/// This is what the wire sends; the model's check is that the ACL is the
/// one read.
#[test]
fn recycling_a_directory_made_again_meanwhile() {
    scenario(Mutation::None, 2, RECYCLE_THRESHOLD, |w| {
        w.dir.as_mut().expect("a directory").acl = OPERATOR_ACL;
        w.dir_acls.insert(1, OPERATOR_ACL);
        w.start(0, Mode::Write, true, false)?;
        w.settle()?;
        w.release(0)?;
        let s0 = w.contenders[0].session;
        // The deletion, then the read of the ACL: the recycle is sent.
        let recycling = |w: &World| {
            w.contenders[0].pending.values().any(|(_, op)| {
                matches!(
                    op,
                    Op::Wire {
                        request: Request::Recreate { .. },
                        ..
                    }
                )
            })
        };
        for _ in 0..4 {
            if !recycling(w) {
                w.apply_next(s0);
                w.deliver(s0)?;
            }
        }
        expect(recycling(w), "c0 recycles")?;
        w.remove_dir();
        w.start(1, Mode::Write, true, false)?;
        let s1 = w.contenders[1].session;
        // c1's create and listing find no directory; it makes one, and
        // sends its create again.
        w.apply_next(s1);
        w.apply_next(s1);
        w.deliver(s1)?;
        w.deliver(s1)?;
        w.apply_next(s1);
        w.deliver(s1)?;
        expect(
            w.dir.as_ref().is_some_and(|d| d.acl == DIR_ACL),
            "c1 made the directory",
        )?;
        w.settle()?;
        expect(w.stats.recycles_raced == 1, "the recycle replaced it")?;
        expect(
            w.dir.as_ref().is_some_and(|d| d.acl == OPERATOR_ACL),
            "with the ACL read before",
        )?;
        expect(w.holding(1), "c1 holds in the recycled directory")?;
        w.drain(1)
    })
    .unwrap();
}

/// A create's answer is lost (it was applied), and a stranger deletes the
/// node and makes one of its own under its name before the contender
/// looks: find-own must not take the stranger's node, and creates again.
fn find_own_of_another_session(mutation: Mutation) -> Check {
    scenario(mutation, 1, 0, |w| {
        w.start(0, Mode::Read, true, false)?;
        let s0 = w.contenders[0].session;
        // The create is applied, the listing is not; both answers are lost.
        w.disconnect(s0, Some(1));
        let first = w.children().pop().expect("c0's node");
        w.foreign_replace(&first);
        w.reconnect(s0, Order::Random);
        w.settle()?;
        expect(w.holding(0) && w.name(0) != first, "c0 holds a node of its own")?;
        expect(w.stats.others_token == 1, "find-own saw the stranger's")?;
        w.release(0)?;
        w.settle()?;
        expect(w.children() == [first], "the stranger's node stays")?;
        w.drain(1)
    })
}

#[test]
fn scenario_find_own_skips_a_node_of_another_session() {
    find_own_of_another_session(Mutation::None).unwrap();
    let report = find_own_of_another_session(Mutation::FindOwnAnySession).unwrap_err();
    assert!(report.contains("a node of a stranger"), "{report}");
}

/// A stranger deletes the held node: the keeper's watch tells the machine,
/// which says lost; the next contender takes the lock; the release finds
/// the lock lost and deletes nothing.
fn held_node_deleted(mutation: Mutation) -> Check {
    scenario(mutation, 2, 0, |w| {
        w.start(0, Mode::Write, true, false)?;
        w.settle()?;
        expect(w.holding(0), "c0 holds")?;
        let held = w.name(0);
        w.foreign_delete(&held);
        w.settle()?;
        expect(w.machine(0).is_lost(), "c0's machine says lost")?;
        w.start(1, Mode::Write, true, false)?;
        w.settle()?;
        expect(w.holding(1), "c1 holds")?;
        w.release(0)?;
        w.settle()?;
        expect(
            w.last_outcome(0) == Some(Outcome::Released(Ended::Lost)),
            "c0's release says lost",
        )?;
        w.drain(1)
    })
}

#[test]
fn scenario_a_held_node_deleted_by_a_stranger() {
    held_node_deleted(Mutation::None).unwrap();
    let report = held_node_deleted(Mutation::IgnoreHeldDeletion).unwrap_err();
    assert!(report.contains("does not say lost"), "{report}");
}

/// A stranger writes to the held node (the keeper's watch fires), then
/// deletes it and makes one of its own under its name (no watch left: no
/// event): the keeper's read finds another czxid, and the machine says
/// lost; its release deletes nothing of the stranger's.
#[test]
fn scenario_a_held_node_made_again_by_a_stranger() {
    scenario(Mutation::None, 1, 0, |w| {
        w.start(0, Mode::Write, true, false)?;
        w.settle()?;
        expect(w.holding(0), "c0 holds")?;
        let held = w.name(0);
        w.foreign_data(&held);
        w.foreign_replace(&held);
        w.settle()?;
        expect(w.machine(0).is_lost(), "c0's machine says lost")?;
        w.release(0)?;
        w.settle()?;
        expect(
            w.last_outcome(0) == Some(Outcome::Released(Ended::Lost)) && w.live(&held),
            "c0's release says lost, the stranger's node stays",
        )?;
        w.drain(1)
    })
    .unwrap();
}

/// No directory, nor its parents: the first acquire makes both (the
/// directory a container, its counter from 0). Once it is empty the server
/// removes it; on a server without containers, the next acquire makes it
/// persistent, its counter from 0 again.
#[test]
fn scenario_the_directory_made_removed_and_made_again() {
    scenario(Mutation::None, 2, 0, |w| {
        w.dir = None;
        w.parents = false;
        w.start(0, Mode::Read, true, false)?;
        w.settle()?;
        expect(
            w.holding(0) && w.stats.parents_made == 1 && w.stats.dirs_made == 1,
            "c0 made the parents and the directory, and holds",
        )?;
        expect(
            w.machine(0).seq() == Some(0) && w.dir.as_ref().is_some_and(|d| d.container && d.acl == DIR_ACL),
            "a container with the lock's ACL, its counter from 0",
        )?;
        w.release(0)?;
        w.settle()?;
        expect(w.moves(Kind::RemoveDir).len() == 1, "the empty container may go")?;
        w.remove_dir();
        w.containers = false;
        w.start(1, Mode::Write, true, false)?;
        w.settle()?;
        expect(
            w.holding(1) && w.stats.dirs_made == 2 && w.stats.no_containers == 1,
            "c1 made it again, persistent, and holds",
        )?;
        expect(
            w.machine(1).seq() == Some(0) && w.dir.as_ref().is_some_and(|d| !d.container),
            "its counter from 0",
        )?;
        w.drain(1)
    })
    .unwrap();
}

/// The directory holds a stranger's data: an acquire that checks it fails
/// with `DirectoryHoldsData` and leaves no node. Once the stranger clears
/// it, the next acquire checks and holds; the lock knows from then on.
#[test]
fn scenario_the_directory_holds_data() {
    scenario(Mutation::None, 2, 0, |w| {
        w.check_data = true;
        w.set_dir_data("{\"config\": 1}".to_owned());
        w.start(0, Mode::Write, true, false)?;
        w.settle()?;
        expect(
            w.last_outcome(0) == Some(Outcome::Failed(Failure::DirectoryHoldsData)),
            "c0 fails with DirectoryHoldsData",
        )?;
        expect(w.children().is_empty(), "and leaves no node")?;
        w.foreign_record(String::new());
        w.start(1, Mode::Write, true, false)?;
        w.settle()?;
        expect(w.holding(1) && w.machine(1).data_checked(), "c1 checks and holds")?;
        w.release(1)?;
        w.settle()?;
        expect(
            w.contenders[1].data_checked,
            "c1's lock knows the data is the lock's",
        )?;
        w.drain(1)
    })
    .unwrap();
}

/// What the simulation found in `Contender`: an acquire that must read the
/// directory's data (it holds a release record) is created, then a stranger
/// deletes its node and the server removes the empty container before the
/// read: the read finds no directory. The node is gone: `Lost`, not a
/// failed request.
#[test]
fn the_directory_gone_before_its_data_is_read() {
    scenario(Mutation::None, 1, 0, |w| {
        w.check_data = true;
        w.set_dir_data("w9-W-0000000007".to_owned());
        w.start(0, Mode::Read, true, false)?;
        let s0 = w.contenders[0].session;
        // The create and the listing: the data is to be read.
        w.apply_next(s0);
        w.apply_next(s0);
        w.deliver(s0)?;
        w.deliver(s0)?;
        let mine = w.name(0);
        w.foreign_delete(&mine);
        w.remove_dir();
        w.settle()?;
        expect(
            w.last_outcome(0) == Some(Outcome::Failed(Failure::Lost)),
            "c0 fails with Lost",
        )?;
        w.drain(1)
    })
    .unwrap();
}

/// A holder's session expires while its release is under way (the
/// deletion not applied yet): the release ends with the session, whose
/// expiry deleted the node; the waiter takes the lock.
#[test]
fn scenario_the_session_expires_during_a_release() {
    scenario(Mutation::None, 2, 0, |w| {
        w.start(0, Mode::Write, true, false)?;
        w.settle()?;
        w.start(1, Mode::Write, true, false)?;
        w.settle()?;
        expect(w.holding(0) && w.waits_on(1, 0), "c0 holds, c1 waits on it")?;
        w.release(0)?;
        let s0 = w.contenders[0].session;
        w.disconnect(s0, Some(0));
        w.expire(s0);
        w.settle()?;
        expect(
            w.last_outcome(0) == Some(Outcome::Released(Ended::SessionEnded)),
            "c0's release ends with the session",
        )?;
        expect(w.stats.release_expired == 1, "counted")?;
        expect(w.holding(1), "c1 holds")?;
        w.drain(1)
    })
    .unwrap();
}

/// c1's lock gives its nodes an ACL that denies c1's own identity READ:
/// its wait cannot watch its own node (`NoAuth`), so a hand-off asks with
/// `exists` whether it is still there. A stranger deletes it while c1 waits
/// on c0 (no watch: no event); c0's release hands off, the check finds the
/// node gone, and c1 fails with `Lost` instead of taking the lock.
fn own_node_unreadable(mutation: Mutation) -> Check {
    scenario(mutation, 2, 0, |w| {
        w.unreadable = 0b10;
        w.start(0, Mode::Write, true, false)?;
        w.settle()?;
        w.start(1, Mode::Write, true, false)?;
        w.settle()?;
        expect(w.holding(0) && w.waits_on(1, 0), "c0 holds, c1 waits on it")?;
        expect(w.stats.own_unreadable == 1, "c1 cannot watch its own node")?;
        deleted_while_waiting_fails_lost(w, 1, 0)?;
        expect(w.stats.checked_grants == 0, "no grant")?;
        w.drain(1)
    })
}

#[test]
fn scenario_a_waiter_that_cannot_read_its_own_node_checks_it() {
    own_node_unreadable(Mutation::None).unwrap();
    let report = own_node_unreadable(Mutation::OwnUnreadableWatched).unwrap_err();
    assert!(report.contains("when its node"), "{report}");
}

/// c0's lock gives its nodes an ACL that lets only its own identity READ:
/// c1's wait on c0's node is refused its watch (`NoAuth`) and polls it with
/// `exists`, carried by `wire::Poll`. While c0 holds, each look finds the
/// node and the next is due; c0's session expires (no release marker is
/// made, no event reaches c1), and the next look finds the node gone: c1
/// lists again and is granted.
#[test]
fn scenario_a_wait_on_a_node_it_may_not_read_polls_it_until_it_is_gone() {
    scenario(Mutation::None, 2, 0, |w| {
        w.private = 0b01;
        w.start(0, Mode::Write, true, false)?;
        w.settle()?;
        w.start(1, Mode::Write, true, false)?;
        w.settle()?;
        expect(w.holding(0) && w.waits_on(1, 0), "c0 holds, c1 waits on it")?;
        expect(w.stats.polls == 1, "c1 polls c0's node")?;
        for _ in 0..3 {
            w.look(1);
            w.settle()?;
            expect(w.waits_on(1, 0), "a look finds c0's node: c1 waits on")?;
        }
        expect(w.stats.looks == 3, "three looks")?;
        let s0 = w.contenders[0].session;
        w.expire(s0);
        w.settle()?;
        expect(w.waits_on(1, 0), "nothing tells c1: it waits for its next look")?;
        w.look(1);
        w.settle()?;
        expect(w.holding(1), "the look finds c0's node gone: c1 holds")?;
        w.drain(1)
    })
    .unwrap();
}

/// The downgrade's race: c0 holds a writer node, c1 (a reader with a
/// deadline) waits on it, and c2 (a writer) on c1. c0 downgrades: its
/// reader's listing finds c1 right after the writer node, and its
/// transaction checks that c1 still exists. Before the transaction is
/// applied, c1's deadline passes and it withdraws: c2 now waits on c0's
/// writer node, whose deletion would grant it. The check refuses the
/// transaction, the reader lists again and the downgrade keeps the writer
/// node; without the check, the writer node is replaced with a writer
/// queued right behind it.
fn downgrade_race(mutation: Mutation) -> Check {
    scenario(mutation, 3, 0, |w| {
        w.start(0, Mode::Write, true, false)?;
        w.settle()?;
        w.start(1, Mode::Read, true, true)?;
        w.settle()?;
        w.start(2, Mode::Write, true, false)?;
        w.settle()?;
        expect(w.holding(0) && w.waits_on(1, 0) && w.waits_on(2, 1), "a chain")?;
        let writer = w.name(0);
        let s0 = w.contenders[0].session;
        w.downgrade(0)?;
        // The reader's create and listing: its transaction is sent.
        for _ in 0..2 {
            w.apply_next(s0);
        }
        for _ in 0..2 {
            w.deliver(s0)?;
        }
        let sent = w.contenders[0].pending.values().any(|(_, op)| {
            matches!(
                op,
                Op::Wire {
                    request: Request::Multi { .. },
                    ..
                }
            )
        });
        expect(sent, "c0's downgrade sends its transaction")?;
        w.deadline(1)?;
        w.settle_but(Some(s0))?;
        let on_writer = |w: &World| {
            let acq = w.contenders[2].acq.as_ref();
            acq.is_some_and(|a| a.waiting && a.watching.contains(&writer))
        };
        expect(on_writer(w), "c1 withdrew, c2 waits on c0's writer node")?;
        w.settle()?;
        expect(
            w.holding(0) && w.name(0) == writer && w.stats.downgrades_kept == 1,
            "the downgrade keeps the writer node",
        )?;
        expect(on_writer(w), "c2 waits on it")?;
        w.drain(1)
    })
}

#[test]
fn scenario_the_downgrade_checks_the_reader_after_the_writer() {
    downgrade_race(Mutation::None).unwrap();
    let report = downgrade_race(Mutation::DowngradeUnchecked).unwrap_err();
    assert!(report.contains("a writer queued right behind it"), "{report}");
}

/// A server that leaves the created node's stat out of a transaction's
/// answer (ZOOKEEPER-4026): the wire asks for the downgrade's reader with an
/// `exists` after the transaction (`Progress::Send`), and the reader holds
/// with the czxid it finds.
#[test]
fn scenario_a_downgrade_whose_reader_stat_is_left_out() {
    scenario(Mutation::None, 1, 0, |w| {
        w.stat_left_out = true;
        w.start(0, Mode::Write, true, false)?;
        w.settle()?;
        expect(w.holding(0), "c0 holds")?;
        let writer = w.name(0);
        w.downgrade(0)?;
        w.settle()?;
        let reader = w.name(0);
        expect(
            w.holding(0) && w.stats.downgrades == 1 && w.stats.stats_left_out == 1,
            "c0 downgraded, its reader's stat left out",
        )?;
        expect(
            !w.live(&writer)
                && reader.contains("-R-")
                && w.machine(0).czxid() == w.node(&reader).map(|n| n.czxid as i64),
            "c0 holds the reader node, with its czxid",
        )?;
        w.drain(1)
    })
    .unwrap();
}

/// The way to a batched `SetWatches` (`together`): c2 learns, in a wait of
/// its own (its `getData` on its node answers), that its session may read
/// its nodes, and withdraws; c0 holds; c1 (with a deadline) waits on c0.
fn learnt_and_queued(w: &mut World) -> Check {
    w.start(0, Mode::Write, true, false)?;
    w.settle()?;
    w.start(2, Mode::Write, true, true)?;
    w.settle()?;
    expect(w.holding(0) && w.waits_on(2, 0), "c0 holds, c2 waits on it")?;
    w.deadline(2)?;
    w.settle()?;
    expect(
        w.contenders[2].own_readable.is_some(),
        "c2's handle knows it may read its nodes",
    )?;
    w.start(1, Mode::Write, true, true)?;
    w.settle()?;
    expect(w.waits_on(1, 0), "c1 waits on c0")
}

/// What a stranger does to c2's node in `batched`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stray {
    /// Writes a revocation request to it after its create, before its
    /// `SetWatches` is applied.
    Revokes,
    /// Writes to it and deletes it, likewise.
    Deletes,
    /// Writes to it while c2 waits (its watches set).
    WritesLater,
}

/// c2 queues behind c1 (a writer behind a writer: only c1's release grants
/// it), and sets the watches on its own node and on c1's release marker in
/// one `SetWatches`, relative to its node's czxid. With `Revokes` (and
/// `Deletes`), a stranger writes a revocation request to c2's node (and
/// deletes it) before that request is applied: it fires `NodeDataChanged`
/// (`NodeDeleted`) at once, before its answer. c2 fails with `Lost`; or it
/// waits on c1 knowing that its node's watch fired: c1's release (after
/// c0's) does not hand it the lock, it lists again, is granted, and its
/// guard knows of the request (its keeper reads the node). With
/// `WritesLater`, the write comes while c2 waits: its node's watch fires,
/// it lists again and watches its node with `getData` (a `SetWatches`
/// relative to its czxid would fire again at once), and is granted in
/// turn.
fn batched(mutation: Mutation, stray: Stray) -> Check {
    scenario(mutation, 3, 0, |w| {
        learnt_and_queued(w)?;
        w.start(2, Mode::Write, true, false)?;
        let s2 = w.contenders[2].session;
        // The create and its listing, applied and answered: the watches go.
        w.apply_next(s2);
        w.apply_next(s2);
        w.deliver(s2)?;
        w.deliver(s2)?;
        let sent: Vec<String> = w.sessions[s2].inflight.iter().map(|(_, op)| op.shown()).collect();
        expect(
            sent.iter().filter(|op| op.starts_with("SetWatches")).count() == 1
                && !sent.iter().any(|op| op.starts_with("Exists")),
            "c2 sets its own node's and the marker's watches in one request",
        )?;
        let mine = w.name(2);
        let fired = w.stats.set_watches_fired;
        if stray != Stray::WritesLater {
            w.zxid += 1;
            w.write_node(&mine, REVOKE_PAYLOAD.to_vec());
        }
        if stray == Stray::Deletes {
            w.foreign_delete(&mine);
        }
        w.settle()?;
        let at_once = u64::from(stray != Stray::WritesLater);
        expect(
            w.stats.set_watches_fired == fired + at_once,
            "the request fired at once what changed since the create",
        )?;
        if stray == Stray::Deletes {
            expect(
                w.last_outcome(2) == Some(Outcome::Failed(Failure::Lost)),
                "c2 fails with Lost",
            )?;
            return w.drain(1);
        }
        expect(w.waits_on(2, 1), "c2 waits on c1")?;
        if stray == Stray::WritesLater {
            w.foreign_data(&mine);
            w.settle()?;
            expect(w.waits_on(2, 1), "c2 waits on c1 again")?;
            let s = w.contenders[2].session;
            expect(
                w.watches.get(&mine).is_some_and(|watchers| watchers.contains(&s)),
                "c2 watches its node again",
            )?;
        }
        w.release(0)?;
        w.settle()?;
        expect(w.holding(1), "c1 holds")?;
        w.release(1)?;
        w.settle()?;
        expect(w.holding(2), "c2 holds")?;
        if stray == Stray::Revokes {
            expect(
                !w.machine(2).counts().handoff,
                "c2 listed again instead of trusting its node's watch",
            )?;
            expect(
                w.machine(2).is_revoked(),
                "c2's guard knows of the revocation request",
            )?;
        }
        w.drain(1)
    })
}

#[test]
fn scenario_a_batched_set_watches_fires_what_changed_since_the_create() {
    batched(Mutation::None, Stray::Revokes).unwrap();
    batched(Mutation::None, Stray::Deletes).unwrap();
    let report = batched(Mutation::LaterRelative, Stray::Revokes).unwrap_err();
    assert!(report.contains("fired at once"), "{report}");
}

#[test]
fn scenario_a_write_seen_is_read_with_get_data() {
    batched(Mutation::None, Stray::WritesLater).unwrap();
    let report = batched(Mutation::TogetherWritten, Stray::WritesLater).unwrap_err();
    assert!(report.contains("told again of the write"), "{report}");
}

/// c2's lock gives its nodes an ACL that denies c2 READ, and its handle
/// does not know yet whether it may read them: queued behind c1 (whose
/// release alone grants it), c2 watches its node with `getData`, which
/// says `NoAuth`, and a hand-off then asks with `exists`. A stranger
/// deletes c2's node; c0's and c1's releases hand off, the check finds the
/// node gone, and c2 fails with `Lost`. Setting the watches in one
/// `SetWatches`, the server would answer and stay silent of c2's node.
fn unreadable_first_wait(mutation: Mutation) -> Check {
    scenario(mutation, 3, 0, |w| {
        w.unreadable = 0b100;
        w.start(0, Mode::Write, true, false)?;
        w.settle()?;
        w.start(1, Mode::Write, true, false)?;
        w.settle()?;
        w.start(2, Mode::Write, true, false)?;
        w.settle()?;
        expect(w.waits_on(1, 0) && w.waits_on(2, 1), "c1 waits on c0, c2 on c1")?;
        a_waiter_whose_node_is_deleted_fails_lost(w, 2, 0, 1)?;
        expect(
            w.contenders[2].own_readable.is_none(),
            "c2's handle does not take its nodes for readable",
        )?;
        w.drain(1)
    })
}

#[test]
fn scenario_a_node_not_known_readable_is_watched_with_get_data() {
    unreadable_first_wait(Mutation::None).unwrap();
    let report = unreadable_first_wait(Mutation::TogetherUnreadable).unwrap_err();
    assert!(report.contains("when its node"), "{report}");
}

/// What batching must not do, found by the simulation: a stranger makes
/// c1's release marker after c2's listing is applied (the listing does not
/// show it) and before c2's `SetWatches` is: the request fires
/// `NodeCreated` at once, and c2 takes it for c1's release. A release's
/// marker lives only inside its transaction, so a marker that a
/// `SetWatches` finds there is a stranger's (as one `exists` finds there,
/// which the wire drops). c1 then gives up (its deadline): c2 must list
/// again and wait on c0, which still holds, not take the lock.
fn batched_marker_made_before_it_is_watched(mutation: Mutation) -> Check {
    scenario(mutation, 3, 0, |w| {
        learnt_and_queued(w)?;
        w.start(2, Mode::Write, true, false)?;
        let s2 = w.contenders[2].session;
        w.apply_next(s2);
        w.apply_next(s2);
        let c1 = w.name(1);
        w.foreign_marker(&c1);
        w.deliver(s2)?;
        w.deliver(s2)?;
        w.settle()?;
        expect(w.waits_on(2, 1), "c2 waits on c1")?;
        w.deadline(1)?;
        w.settle()?;
        expect(w.holding(0) && w.waits_on(2, 0), "c0 holds, c2 waits on it")?;
        w.drain(1)
    })
}

#[test]
fn scenario_a_strangers_marker_found_by_a_batched_set_watches_is_no_release() {
    batched_marker_made_before_it_is_watched(Mutation::None).unwrap();
}

/// What batching must not do, found by the simulation: c1's lock gives its
/// nodes an ACL that denies c1 READ. While c1 first waits, a stranger
/// replaces its node with one of its own under its name, which c1 may
/// read: c1's `getData` on "its node" answers, and its handle takes that
/// for proof that it may read its nodes. Its next wait sets its own node's
/// watch in a `SetWatches`, which the server answers and leaves silent (no
/// READ); a stranger deletes c1's node, and a hand-off then grants c1 with
/// its node gone. A read proves my nodes readable only if it read mine
/// (its czxid).
fn readable_learnt_from_a_strangers_node(mutation: Mutation) -> Check {
    scenario(mutation, 3, 0, |w| {
        w.unreadable = 0b10;
        w.start(0, Mode::Write, true, false)?;
        w.settle()?;
        w.start(1, Mode::Write, true, false)?;
        let s1 = w.contenders[1].session;
        w.apply_next(s1);
        w.apply_next(s1);
        w.deliver(s1)?;
        w.deliver(s1)?;
        let first = w.name(1);
        w.foreign_replace(&first);
        w.settle()?;
        // Its `getData` read the stranger's node (another czxid): its
        // node is gone, and it learnt nothing of its ACL.
        expect(
            w.last_outcome(1) == Some(Outcome::Failed(Failure::Lost)),
            "c1 fails with Lost",
        )?;
        expect(
            w.contenders[1].own_readable.is_none(),
            "c1's handle does not take its nodes for readable",
        )?;
        w.foreign_delete(&first);
        w.settle()?;
        w.start(2, Mode::Write, true, false)?;
        w.settle()?;
        w.start(1, Mode::Write, true, false)?;
        w.settle()?;
        expect(w.waits_on(2, 0) && w.waits_on(1, 2), "c2 waits on c0, c1 on c2")?;
        a_waiter_whose_node_is_deleted_fails_lost(w, 1, 0, 2)?;
        w.drain(1)
    })
}

#[test]
fn scenario_a_strangers_node_under_my_name_proves_nothing_of_my_acl() {
    readable_learnt_from_a_strangers_node(Mutation::None).unwrap();
}

/// READ on c2's node taken away while its session is cut off,
/// after its handle learnt (on the connection before) that it reads its
/// nodes. c2's first `SetWatches` (own node and c1's marker, together) is
/// lost with the connection; back on a new connection, the wait must not
/// set its own node's watch in one `SetWatches` again (the server would
/// answer and stay silent of c2's node): it asks with `getData`, which
/// says `NoAuth`, and a hand-off checks with `exists`. A stranger deletes
/// c2's node; c0's and c1's releases hand off; c2 must fail `Lost`, not be
/// granted on c1's marker with its node gone. (The model never takes READ
/// away in its random schedules: this is the schedule that shows a
/// reconnection must reach the machine, `wire::Run::next`.)
fn read_taken_away_while_cut_off(mutation: Mutation) -> Check {
    scenario(mutation, 3, 0, |w| {
        learnt_and_queued(w)?;
        w.start(2, Mode::Write, true, false)?;
        let s2 = w.contenders[2].session;
        // The create and its listing, applied and answered: the watches go.
        w.apply_next(s2);
        w.apply_next(s2);
        w.deliver(s2)?;
        w.deliver(s2)?;
        expect(
            sends_set_watches(w, s2),
            "c2 sets its own node's and the marker's watches in one request",
        )?;
        // Cut before the SetWatches reaches the server.
        w.disconnect(s2, Some(0));
        take_read_away(w, 2);
        // Everything the client made up for the lost connection, taken.
        while !w.sessions[s2].outbound.is_empty() {
            w.deliver(s2)?;
        }
        w.reconnect(s2, Order::Random);
        w.settle()?;
        expect(w.waits_on(2, 1), "c2 waits on c1 again")?;
        a_waiter_whose_node_is_deleted_fails_lost(w, 2, 0, 1)?;
        w.drain(1)
    })
}

#[test]
fn scenario_read_taken_away_while_cut_off_is_asked_with_get_data() {
    read_taken_away_while_cut_off(Mutation::None).unwrap();
}

/// A reconnection sets my node's watch again without a READ check, and the
/// server checks READ as a watch fires: the next wait must not trust the
/// watch from before. c2 waits on c1 (its own node's watch set with
/// `getData`, READ allowed); its connection is cut and it comes back, READ
/// on its node taken away while it was away (`while_away`) or after it came
/// back. c1 withdraws, and c2's new wait (after the record is read and the
/// directory listed again) sets its node's watch again and learns it may
/// not read it. A stranger deletes c2's node and c0 releases: the hand-off
/// asks with `exists`, and c2 fails `Lost`. Trusting the watch from the old
/// connection, it would be granted with its node gone.
fn own_watch_from_an_older_connection(while_away: bool) -> Check {
    scenario(Mutation::None, 3, 0, |w| {
        w.start(0, Mode::Write, true, false)?;
        w.settle()?;
        w.start(1, Mode::Write, true, true)?;
        w.settle()?;
        w.start(2, Mode::Write, true, false)?;
        w.settle()?;
        expect(
            w.holding(0) && w.waits_on(1, 0) && w.waits_on(2, 1),
            "c0 holds, c1 and c2 wait",
        )?;
        let s2 = w.contenders[2].session;
        w.disconnect(s2, Some(0));
        if while_away {
            take_read_away(w, 2);
        }
        w.reconnect(s2, Order::Random);
        w.settle()?;
        if !while_away {
            take_read_away(w, 2);
        }
        expect(w.waits_on(2, 1), "c2 waits on c1 still")?;
        w.deadline(1)?;
        w.settle()?;
        expect(w.waits_on(2, 0), "c2 waits on c0 now")?;
        deleted_while_waiting_fails_lost(w, 2, 0)?;
        w.drain(2)
    })
}

#[test]
fn scenario_an_own_watch_from_an_older_connection_is_set_again_before_a_hand_off() {
    own_watch_from_an_older_connection(true).unwrap();
    own_watch_from_an_older_connection(false).unwrap();
}

/// The window `Action::SetWatches`'s `together` documents: c2's
/// listing answer is read just before its connection is cut, so its wait
/// builds its `SetWatches` (together, as its handle learnt on this
/// connection) while cut off; the client writes it on the next
/// connection, where READ on c2's node was taken away meanwhile. The
/// reconnection's state change marks the wait interrupted, and a request
/// after it tells the machine of the new connection (its node's watch
/// counts as not set): the hand-off checks c2's node with `exists`. A
/// stranger deletes it, c0's and c1's releases hand off, and c2 fails
/// `Lost`; a hand-off that skipped the check would grant it.
fn set_watches_built_while_cut_off(mutation: Mutation) -> Check {
    scenario(mutation, 3, 0, |w| {
        learnt_and_queued(w)?;
        w.start(2, Mode::Write, true, false)?;
        let s2 = w.contenders[2].session;
        w.apply_next(s2);
        w.apply_next(s2);
        // The create's answer, taken.
        w.deliver(s2)?;
        // The listing's answer, read by the client before the cut: it
        // comes after the cut's state change.
        let listing = w.sessions[s2].outbound.pop_front().expect("the listing's answer");
        expect(
            matches!(listing.1, Msg::Reply { .. }) && w.sessions[s2].outbound.is_empty(),
            "only the listing's answer is left",
        )?;
        w.disconnect(s2, Some(0));
        w.sessions[s2].outbound.push_back(listing);
        while !w.sessions[s2].outbound.is_empty() {
            w.deliver(s2)?;
        }
        expect(
            sends_set_watches(w, s2),
            "c2 asked for its watches in one SetWatches while cut off",
        )?;
        take_read_away(w, 2);
        w.reconnect(s2, Order::Random);
        w.settle()?;
        expect(w.waits_on(2, 1), "c2 waits on c1")?;
        a_waiter_whose_node_is_deleted_fails_lost(w, 2, 0, 1)?;
        w.drain(0)
    })
}

#[test]
fn scenario_a_set_watches_built_while_cut_off_is_checked_before_a_hand_off() {
    set_watches_built_while_cut_off(Mutation::None).unwrap();
    let report = set_watches_built_while_cut_off(Mutation::SkipOwnCheck).unwrap_err();
    assert!(report.contains("when its node"), "{report}");
}

/// Contender `c`'s handle learns that it may read its own nodes: an
/// acquire with a deadline queues behind `holder` (its first wait watches
/// its node with `getData`, which reads it) and gives up. Its next
/// acquires on this connection set their node's watch with `SetWatches`,
/// and (a lock's, whose listing left its child watch) the watched node's
/// in the same request, unread (`blind`).
fn learn_readable(w: &mut World, c: usize, holder: usize) -> Check {
    w.start(c, Mode::Write, true, true)?;
    w.settle()?;
    expect(w.waits_on(c, holder), &format!("c{c} waits on c{holder}"))?;
    w.deadline(c)?;
    w.settle()?;
    expect(
        w.contenders[c].own_readable.is_some(),
        &format!("c{c}'s handle knows it may read its nodes"),
    )
}

/// How the watched node, set unread and that c1 may not read, leaves in
/// `unread_watched_node`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Leaves {
    /// Its holder releases it.
    Released,
    /// Its holder's session expires.
    Expires,
    /// A stranger makes a node in the directory first (c1 then reads the
    /// watched node, is refused and polls it); then its holder releases it.
    AfterAStranger,
}

/// c0's lock gives its nodes an ACL that lets only its own identity READ,
/// and c1's handle knows it may read its own: c1 queues behind c0, and its
/// listing leaves a child watch on the directory, so its `SetWatches`
/// carries c0's node with its own, unread (`blind`); the server answers,
/// sets no watch on c0's node and will say nothing of it. When c0's node
/// goes (`Released`, `Expires`), its deletion fires c1's child watch: c1
/// reads c0's node once (`ReadWatched`), finds it gone and is granted.
/// With `AfterAStranger`, a stranger's node fires the child watch first:
/// the read is refused (`NoAuth`), c1 polls c0's node, and a look finds it
/// gone once c0 releases. Without the child watch's event (`IgnoreListing`)
/// c1 waits on a node that is gone, a wake-up missed.
fn unread_watched_node(mutation: Mutation, leaves: Leaves) -> Check {
    scenario(mutation, 2, 0, |w| {
        w.private = 0b01;
        w.start(0, Mode::Write, true, false)?;
        w.settle()?;
        learn_readable(w, 1, 0)?;
        let polls = w.stats.polls;
        w.start(1, Mode::Write, true, false)?;
        w.settle()?;
        expect(w.holding(0) && w.waits_on(1, 0), "c0 holds, c1 waits on it")?;
        expect(
            w.stats.blind == 1 && w.stats.blind_silent == 1 && w.stats.polls == polls,
            "c1 set c0's node's watch unread, which the server keeps silent, and does not poll",
        )?;
        let s1 = w.contenders[1].session;
        expect(w.child_watches.contains(&s1), "c1's listing left a child watch")?;
        let c0 = w.name(0);
        if leaves == Leaves::AfterAStranger {
            w.foreign_node(2);
            w.settle()?;
            expect(
                w.stats.read_watched == 1 && w.stats.read_watched_refused == 1,
                "the stranger's node makes c1 read c0's node once, refused",
            )?;
            expect(
                w.waits_on(1, 0) && w.stats.polls == polls + 1,
                "c1 polls c0's node",
            )?;
        }
        match leaves {
            Leaves::Released | Leaves::AfterAStranger => w.release(0)?,
            Leaves::Expires => w.expire(w.contenders[0].session),
        }
        w.settle()?;
        // Nothing owed to a waiter at rest (a missed wake-up fails here).
        w.check_at_rest()?;
        if leaves == Leaves::AfterAStranger {
            expect(
                w.waits_on_node(1, &c0),
                "nothing tells c1: it waits for its next look",
            )?;
            w.look(1);
            w.settle()?;
        } else {
            expect(
                w.stats.read_watched == 1 && w.stats.read_watched_gone == 1,
                "the deletion makes c1 read c0's node once, gone",
            )?;
        }
        expect(w.holding(1), "c1 holds")?;
        expect(w.stats.read_watched == 1, "one read of c0's node")?;
        w.drain(1)
    })
}

#[test]
fn scenario_a_watched_node_it_may_not_read_set_unread_is_read_when_the_directory_changes() {
    for leaves in [Leaves::Released, Leaves::Expires, Leaves::AfterAStranger] {
        unread_watched_node(Mutation::None, leaves).unwrap();
    }
    for leaves in [Leaves::Released, Leaves::Expires] {
        let report = unread_watched_node(Mutation::IgnoreListing, leaves).unwrap_err();
        assert!(report.contains("a missed wake-up"), "{leaves:?}: {report}");
    }
}

/// c1's handle knows it may read its nodes, and c1 waits on c0 with c0's
/// node's watch set unread (`blind`), a node it may read: the server set
/// that watch. A stranger makes a node in the directory: c1's child watch
/// fires, and c1 reads c0's node once (`ReadWatched`), finds it and waits
/// on. c2 queues behind (its node fires no child watch of c1's: the
/// listing's was one-shot and no listing set it again), and another
/// stranger's node comes: c1 reads nothing more. c0 releases: its node's
/// watch tells c1, which is granted on that deletion.
fn strangers_node_before_the_deletion(mutation: Mutation) -> Check {
    scenario(mutation, 3, 0, |w| {
        w.start(0, Mode::Write, true, false)?;
        w.settle()?;
        learn_readable(w, 1, 0)?;
        w.start(1, Mode::Write, true, false)?;
        w.settle()?;
        expect(w.holding(0) && w.waits_on(1, 0), "c0 holds, c1 waits on it")?;
        expect(
            w.stats.blind == 1 && w.stats.blind_silent == 0,
            "c1 set c0's node's watch unread, and the server set it",
        )?;
        let s1 = w.contenders[1].session;
        let c0 = w.name(0);
        expect(
            w.watches.get(&c0).is_some_and(|watchers| watchers.contains(&s1)),
            "c1 watches c0's node on the server",
        )?;
        w.foreign_node(2);
        w.settle()?;
        expect(
            w.stats.read_watched == 1 && w.stats.listing_events == 1,
            "the stranger's node makes c1 read c0's node once",
        )?;
        expect(w.waits_on(1, 0), "c0's node is there: c1 waits on")?;
        w.start(2, Mode::Write, true, false)?;
        w.settle()?;
        w.foreign_node(2);
        w.settle()?;
        expect(
            w.waits_on(1, 0) && w.waits_on(2, 1) && w.stats.read_watched == 1,
            "c1 reads nothing more, c2 waits on c1",
        )?;
        let handoffs = w.stats.handoffs;
        w.release(0)?;
        w.settle()?;
        expect(w.holding(1), "c1 holds")?;
        expect(
            w.stats.read_watched == 1 && w.stats.handoffs == handoffs + 1,
            "granted on the deletion (a hand-off), no read more",
        )?;
        w.drain(1)
    })
}

#[test]
fn scenario_a_strangers_node_before_the_deletion_reads_the_watched_node_once() {
    strangers_node_before_the_deletion(Mutation::None).unwrap();
}

/// c1's handle knows it may read its nodes. Its create and listing are
/// answered (the listing's child watch set), and its `SetWatches` (c0's
/// node unread with its own) is sent; before it is applied, c0 releases:
/// the deletion fires c1's child watch, and the `SetWatches` then finds
/// c0's node gone and fires `NodeDeleted` at once. Both events arrive with
/// the exchange under way, and the wait takes the deletion first (the
/// listing's event comes after the watched node's, `Arrived::in_order`):
/// c1 is granted with no read of c0's node.
fn deletion_and_listing_together(mutation: Mutation) -> Check {
    scenario(mutation, 2, 0, |w| {
        w.start(0, Mode::Write, true, false)?;
        w.settle()?;
        learn_readable(w, 1, 0)?;
        w.start(1, Mode::Write, true, false)?;
        let s1 = w.contenders[1].session;
        // The create and its listing, applied and answered.
        w.apply_next(s1);
        w.apply_next(s1);
        w.deliver(s1)?;
        w.deliver(s1)?;
        expect(sends_set_watches(w, s1), "c1's SetWatches is sent")?;
        expect(
            w.stats.blind == 1 && w.child_watches.contains(&s1),
            "it carries c0's node unread, and c1's listing left a child watch",
        )?;
        let (fired, events) = (w.stats.children_fired, w.stats.listing_events);
        w.release(0)?;
        let s0 = w.contenders[0].session;
        while !w.sessions[s0].inflight.is_empty() {
            w.apply_next(s0);
        }
        expect(
            w.stats.children_fired == fired + 1,
            "c0's deletion fires c1's child watch",
        )?;
        w.settle()?;
        expect(w.holding(1), "c1 holds")?;
        expect(
            w.stats.read_watched == 0 && w.stats.listing_events == events,
            "c1 read nothing and took no listing's event",
        )?;
        w.drain(1)
    })
}

#[test]
fn scenario_a_deletion_that_comes_with_the_listings_event_grants_with_no_read() {
    deletion_and_listing_together(Mutation::None).unwrap();
}
