use std::time::Duration;

use super::{AfterLook, BeforeLook, Observing};
use crate::lease::SessionState;
use crate::wire::Error;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn an_observer_looks_only_while_connected_and_stops_with_the_session() {
    let observing = Observing::new();
    for (state, before) in [
        (SessionState::Connected, BeforeLook::Look),
        (SessionState::ConnectedReadOnly, BeforeLook::AwaitState),
        (SessionState::Disconnected, BeforeLook::AwaitState),
        (SessionState::Expired, BeforeLook::Stop),
        (SessionState::Closed, BeforeLook::Stop),
        (SessionState::AuthFailed, BeforeLook::Stop),
    ] {
        assert_eq!(observing.before_look(state), before, "{state:?}");
    }
}

#[test]
fn a_look_that_succeeds_is_told_and_one_that_ends_with_the_session_stops() {
    let mut observing = Observing::new();
    assert_eq!(observing.looked(Ok(())), AfterLook::Publish(()));
    assert_eq!(observing.looked::<()>(Err(Error::SessionEnded)), AfterLook::Stop);
}

#[test]
fn a_lost_answer_keeps_the_last_leader_and_any_other_failure_makes_it_unknown() {
    let mut observing = Observing::new();
    assert_eq!(
        observing.looked::<()>(Err(Error::Unanswered)),
        AfterLook::Retry(ms(50))
    );
    assert_eq!(
        observing.looked::<()>(Err(Error::NoAuth)),
        AfterLook::Unknown(ms(100))
    );
    assert_eq!(
        observing.looked::<()>(Err(Error::Failed)),
        AfterLook::Unknown(ms(200))
    );
}

#[test]
fn failed_looks_pause_longer_each_time_up_to_a_second_until_one_succeeds() {
    let mut observing = Observing::new();
    let pauses: Vec<AfterLook<()>> = (0..6).map(|_| observing.looked(Err(Error::Unanswered))).collect();
    let expected: Vec<AfterLook<()>> = [50, 100, 200, 400, 800, 1000]
        .into_iter()
        .map(|n| AfterLook::Retry(ms(n)))
        .collect();
    assert_eq!(pauses, expected);
    assert_eq!(observing.looked(Ok(())), AfterLook::Publish(()));
    assert_eq!(
        observing.looked::<()>(Err(Error::Unanswered)),
        AfterLook::Retry(ms(50))
    );
}
