//! The watches one acquire holds: my own node's, the release marker's and
//! the watched nodes', each with its carrier's handle `W` (the library's
//! watch future, the simulation's name of a watch).
//!
//! Sans-IO, as [`super::Arrivals`]: which watches an exchange drops as it
//! is sent and which it keeps ([`Watches::replace`]), which an answer
//! leaves ([`Watches::keep`]), which a wait waits on, what a fired one
//! tells [`Arrivals`] ([`Watches::collect`]), which the machine may count
//! as set ([`Watches::pending_watched`]), and which a lock keeps once its
//! wait no longer needs them ([`Lingering`]) are decided here; a carrier
//! only asks each handle whether it fired.
//!
//! ```text
//! watches = run.watches_mut()   (a [`super::Run`] holds one acquire's)
//! each exchange:  for w in watches.replace(&exchange): lingering.let_go(w, fired)   (the rest dropped)
//!                 carry it; run.exchanged(.., what the answers left, fired, ..): it keeps them,
//!                 pumps (it collects) and tells the machine watches.pending_watched()
//! each wait:      sleep until run.gather(fired, ..) (it collects) says something arrived
//! the grant:      the guard's keeper takes watches.take_own()
//! the end:        for w in watches.drain(): lingering.let_go(w, fired)
//! ```

use std::collections::BTreeMap;

use super::{Arrivals, Exchange, Kept, Watch};
use crate::acquire::WatchedKind;
use crate::lease::SessionState;

/// What a carrier's watch gave when asked: its event's kind and the
/// session's state it carries if it fired (it is not asked again), `None`
/// while it is pending.
pub type Fired = Option<(WatchedKind, SessionState)>;

/// A pending watch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Watching<W> {
    /// Whose it is.
    pub kind: Watch,
    /// The node's full path.
    pub path: String,
    /// Left to fire once not needed ([`Exchange::lingers`]): handed to the
    /// lock's [`Lingering`] rather than dropped.
    pub lingers: bool,
    /// The carrier's watch.
    pub watch: W,
}

impl<W> From<Kept<W>> for Watching<W> {
    /// The watch an answer left, as the table holds it.
    fn from(kept: Kept<W>) -> Watching<W> {
        Watching {
            kind: kept.kind,
            path: kept.path,
            lingers: kept.lingers,
            watch: kept.watch,
        }
    }
}

/// The pending watches of one acquire (see the module's documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Watches<W> {
    own: Option<Watching<W>>,
    marker: Option<Watching<W>>,
    /// A semaphore's wait watches several nodes; a lock's wait one.
    watched: Vec<Watching<W>>,
    /// The last listing's watch on the directory's children.
    listing: Option<Watching<W>>,
}

impl<W> Default for Watches<W> {
    fn default() -> Watches<W> {
        Watches {
            own: None,
            marker: None,
            watched: Vec::new(),
            listing: None,
        }
    }
}

impl<W> Watches<W> {
    /// `exchange` is sent: the watches of the kinds it sets anew go
    /// ([`Exchange::replaces`]), a watched node's unless the exchange keeps
    /// it ([`Exchange::kept`]). Returns those that go (my node's, the
    /// marker's, the watched nodes'), for the lock's [`Lingering`]: those
    /// that linger are left to fire, the others dropped, and the server's
    /// watches with them.
    #[must_use = "the watches that go: let go of them (`Lingering::let_go`)"]
    pub fn replace(&mut self, exchange: &Exchange) -> Vec<Watching<W>> {
        let replaced = exchange.replaces();
        let mut go = Vec::new();
        if replaced.contains(&Watch::Own) {
            go.extend(self.own.take());
        }
        if replaced.contains(&Watch::Marker) {
            go.extend(self.marker.take());
        }
        if replaced.contains(&Watch::Watched) {
            let kept = exchange.kept();
            let (keep, watched): (Vec<_>, Vec<_>) = std::mem::take(&mut self.watched)
                .into_iter()
                .partition(|watching| kept.contains(&watching.path));
            self.watched = keep;
            go.extend(watched);
        }
        if replaced.contains(&Watch::Listing) {
            go.extend(self.listing.take());
        }
        go
    }

    /// Keeps the watches an exchange's answers left ([`Kept`]); a guard's
    /// (`Watch::Held`) is its keeper's, not the acquire's.
    pub fn keep(&mut self, kept: impl IntoIterator<Item = Kept<W>>) {
        for kept in kept {
            let watching = Watching::from(kept);
            match watching.kind {
                Watch::Own => self.own = Some(watching),
                Watch::Marker => self.marker = Some(watching),
                Watch::Watched => self.watched.push(watching),
                Watch::Listing => self.listing = Some(watching),
                Watch::Held => {}
            }
        }
    }

    /// The release marker's watch goes (the machine no longer needs it:
    /// [`super::Step::drop_marker`]): returned, to drop.
    #[must_use = "the marker's watch: drop it"]
    pub fn drop_marker(&mut self) -> Option<Watching<W>> {
        self.marker.take()
    }

    /// Asks the watches whether they fired (`fired`), and tells `arrivals`
    /// what each that fired gave; those are taken out (a fired watched
    /// node's no longer lingers: it has fired). A source whose event waits
    /// in `arrivals` is not asked again until it is taken; every watched
    /// node's is asked (a node's later event takes the place of the one not
    /// taken).
    ///
    /// The listing's watch is asked only if `listing` (the machine listens
    /// to it: `Contender::listens_to_listing`); otherwise its event stays
    /// in the carrier's watch, which wakes no wait.
    pub fn collect(
        &mut self,
        arrivals: &mut Arrivals,
        listing: bool,
        mut fired: impl FnMut(&mut W) -> Fired,
    ) {
        if !arrivals.has_own() {
            if let Some((kind, state)) = ask(&mut self.own, &mut fired) {
                arrivals.own(kind, state);
            }
        }
        if !arrivals.has_marker() {
            if let Some((kind, _)) = ask(&mut self.marker, &mut fired) {
                arrivals.marker(kind);
            }
        }
        if listing && !arrivals.has_listing() {
            if let Some((kind, state)) = ask(&mut self.listing, &mut fired) {
                arrivals.listing(kind, state);
            }
        }
        self.watched
            .retain_mut(|watching| match fired(&mut watching.watch) {
                Some((kind, state)) => {
                    arrivals.watched(&watching.path, kind, state);
                    false
                }
                None => true,
            });
    }

    /// True while a watched node's watch is set and has not fired: a wait
    /// has something to wait on ([`super::Run::wait`]).
    pub fn watching(&self) -> bool {
        !self.watched.is_empty()
    }

    /// The child names of the watched nodes whose watches are set and have
    /// not fired (after [`Watches::collect`]: a fired one's event waits in
    /// [`Arrivals`]): the machine counts only those as set
    /// (`Contender::watches_pending`). My node's watch and the marker's are
    /// not counted here: a grant hands my node's, fired or not, to the
    /// guard's keeper.
    pub fn pending_watched(&self) -> Vec<String> {
        self.watched
            .iter()
            .map(|watching| watching.path.rsplit('/').next().unwrap_or_default().to_owned())
            .collect()
    }

    /// My own node's watch, for the guard's keeper at a grant.
    pub fn take_own(&mut self) -> Option<W> {
        self.own.take().map(|own| own.watch)
    }

    /// Every watch left as the acquire ends, for the lock's [`Lingering`]:
    /// my own node's (unless a grant took it), the marker's, the watched
    /// nodes', the listing's.
    pub fn drain(&mut self) -> Vec<Watching<W>> {
        let (own, marker, listing) = (self.own.take(), self.marker.take(), self.listing.take());
        own.into_iter()
            .chain(marker)
            .chain(std::mem::take(&mut self.watched))
            .chain(listing)
            .collect()
    }
}

/// Asks a watch whether it fired: its event if it did (and it is taken out,
/// as it is not asked again).
fn ask<W>(watch: &mut Option<Watching<W>>, fired: &mut impl FnMut(&mut W) -> Fired) -> Fired {
    let event = fired(&mut watch.as_mut()?.watch)?;
    *watch = None;
    Some(event)
}

/// The watches a lock's waits left to fire ([`Exchange::lingers`]), at most
/// one per node: a watch let go on a node that has one here is dropped, and
/// the client only forgets it (the session still has a watcher there, so no
/// removal is sent); a fired one is swept out. So the client keeps at most
/// one such watcher per node, and no request is sent for them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lingering<W>(BTreeMap<String, W>);

impl<W> Default for Lingering<W> {
    fn default() -> Lingering<W> {
        Lingering(BTreeMap::new())
    }
}

impl<W> Lingering<W> {
    /// Takes a watch a wait no longer needs: kept if it lingers and its node
    /// has none here yet, dropped otherwise. The watches here that fired
    /// (`fired`) are swept out first.
    pub fn let_go(&mut self, watching: Watching<W>, mut fired: impl FnMut(&mut W) -> bool) {
        if !watching.lingers {
            return;
        }
        self.0.retain(|_, watch| !fired(watch));
        self.0.entry(watching.path).or_insert(watching.watch);
    }

    /// How many watches are kept here.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True if none is.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests;
