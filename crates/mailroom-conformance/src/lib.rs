//! The store conformance suite: the core's stories, written once over `&dyn Store`, so every
//! store (the file store and PostgreSQL) is held to the very same behaviour.
//!
//! Invariant: a case gets a fresh, empty store and touches nothing but that store; it drives the
//! operations through [`mailroom_core::Mailroom`] (or, in `contract`, the trait itself) and
//! asserts on what they return, never on how a store lays things out.
//!
//! A store's test file stamps out one `#[test]` per case with [`store_tests!`]:
//!
//! ```text
//! fn with_fresh_store(case: mailroom_conformance::Case) {
//!     let dir = tempfile::tempdir().unwrap();
//!     case(&FsStore::new(dir.path().join("home")));
//! }
//! mailroom_conformance::store_tests!(with_fresh_store);
//! ```
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "this crate is a test kit: every case is a test, and a failed step must fail it loudly"
)]

pub mod addressing;
pub mod archive;
pub mod channels;
pub mod contract;
pub mod hooks;
pub mod kit;
pub mod lifecycle;
pub mod lookup;
pub mod reservations;
pub mod revise;
pub mod sending;
pub mod tokens;
pub mod waiting;

use mailroom_core::Store;

/// One conformance case: it is handed a fresh, empty store and panics when the store fails it.
pub type Case = fn(&dyn Store);

/// Every case with its name, for runners that do not use [`store_tests!`].
pub fn all() -> Vec<(&'static str, Case)> {
    __cases!(list)
}

/// Stamps out one `#[test]` per conformance case. `$with` is a function `fn(Case)` that builds a
/// fresh store, runs the case on it and cleans up.
#[macro_export]
macro_rules! store_tests {
    ($with:path) => {
        $crate::__cases! { stamp $with }
    };
}

/// The one list of cases, behind both [`all`] and [`store_tests!`].
#[doc(hidden)]
#[macro_export]
macro_rules! __cases {
    ($mode:ident $($with:path)?) => {
        $crate::__cases! { @go $mode ($($with)?)
            lifecycle::send_delivers_an_unread_copy_with_defaults,
            lifecycle::peek_changes_no_state,
            lifecycle::inbox_reports_the_state_before_and_marks_shown_mail_read,
            lifecycle::inbox_shows_most_urgent_first_then_oldest,
            lifecycle::inbox_limit_leaves_the_rest_unread,
            lifecycle::read_marks_read_and_reports_the_state_before,
            lifecycle::read_with_archive_moves_to_done,
            lifecycle::read_shows_a_broadcast_of_the_project_as_it_is,
            lifecycle::done_archives_pending_mail_once,
            lifecycle::done_without_ids_is_invalid,
            lifecycle::done_checks_every_id_before_moving_any,
            lifecycle::done_all_archives_every_pending_message,
            lifecycle::reply_answers_the_sender_in_the_thread_and_closes_the_original,
            lifecycle::reply_chain_keeps_the_root_thread_and_one_re,
            lifecycle::reply_with_keep_open_leaves_the_original_pending,
            lifecycle::reply_closes_an_unread_original,
            revise::edit_of_unread_mail_changes_it_in_place,
            revise::edit_of_read_mail_sends_a_correction_in_the_thread,
            revise::edit_without_changes_is_invalid_and_changes_nothing,
            revise::edit_with_oversize_body_is_invalid_and_changes_nothing,
            revise::edit_of_a_received_message_is_refused_as_not_sender,
            revise::edit_of_an_unknown_id_is_not_found,
            revise::edit_of_cancelled_mail_delivers_nothing,
            revise::edit_reaches_each_recipient_by_its_state,
            revise::cancel_of_unread_mail_withdraws_it,
            revise::cancel_of_read_mail_is_refused,
            revise::cancel_of_archived_mail_is_refused,
            revise::cancel_of_a_received_message_is_refused_as_not_sender,
            revise::cancel_withdraws_only_the_unread_copies,
            revise::done_of_cancelled_mail_is_refused,
            addressing::send_to_an_inactive_member_is_refused,
            addressing::unknown_handle_in_a_roster_project_suggests_close_names,
            addressing::sender_off_the_roster_or_inactive_is_refused,
            addressing::open_project_creates_an_unknown_mailbox_with_a_notice,
            addressing::send_into_a_new_project_creates_it_open,
            addressing::bare_handle_active_in_two_other_projects_is_ambiguous,
            addressing::bare_handle_prefers_the_current_project,
            addressing::bare_handle_skips_projects_where_it_is_inactive,
            addressing::cross_project_send_records_the_origin,
            addressing::human_is_reachable_from_every_project,
            addressing::resolve_lists_every_candidate_in_order,
            addressing::malformed_and_reserved_names_are_invalid_and_change_nothing,
            addressing::add_project_reports_creation_and_refuses_another_policy,
            addressing::roster_is_sorted_and_refuses_duplicates,
            addressing::member_context_counts_pending_mail,
            addressing::names_match_in_any_case_and_keep_the_first_spelling,
            addressing::a_roster_project_takes_mail_and_changes_only_from_members_and_human,
            addressing::a_close_new_name_is_refused_unless_its_owner_creates_it,
            addressing::imports_follow_the_roster_and_only_human_imports_human_mail,
            sending::several_recipients_each_get_their_own_copy_and_lifecycle,
            sending::a_repeated_recipient_gets_one_copy,
            sending::same_key_from_the_same_sender_delivers_once,
            sending::same_key_from_another_sender_is_independent,
            sending::a_keyed_retry_finishes_an_interrupted_send_and_names_who_got_it_now,
            sending::a_send_names_at_most_max_recipients,
            sending::oversize_body_is_invalid_and_changes_nothing,
            sending::body_of_exactly_the_limit_is_accepted,
            sending::invalid_drafts_are_refused_before_any_write,
            sending::subject_kind_and_priority_are_kept_on_one_line,
            sending::ids_and_dates_come_from_the_same_clock,
            archive::recover_lists_archived_mail_most_recent_first,
            archive::recover_orders_by_archive_time_not_by_id,
            archive::restore_puts_archived_mail_back_to_pending_as_read,
            archive::restore_of_pending_mail_is_refused,
            archive::handover_goes_to_ones_own_mailbox,
            archive::search_finds_archived_and_sent_mail_case_insensitively,
            archive::search_with_an_empty_query_is_invalid,
            lookup::unique_id_prefix_finds_the_message,
            lookup::ambiguous_id_prefix_is_a_conflict_listing_candidates,
            lookup::unknown_id_is_not_found,
            lookup::malformed_id_is_invalid,
            lookup::id_prefix_prefers_pending_over_archived_mail,
            lookup::full_id_finds_archived_mail,
            lookup::another_mailboxs_message_is_not_found,
            contract::deliver_keeps_the_first_copy_of_an_id,
            contract::point_lookups_agree_with_the_listings_they_spare,
            contract::deliver_all_publishes_every_copy_and_one_outbox_trace,
            contract::deliver_fresh_publishes_every_copy_and_one_outbox_trace,
            contract::deliver_all_again_finishes_an_interrupted_call_and_doubles_nothing,
            contract::transition_moves_a_copy_at_most_once,
            contract::a_batch_reports_the_copies_others_moved_first,
            contract::replace_unread_edits_only_unread_copies,
            contract::lookups_of_unknown_things_are_empty,
            contract::ensure_project_and_add_member_are_idempotent,
            contract::a_watch_wakes_for_mail_delivered_after_it_started,
            contract::a_watch_wakes_for_broadcasts_posted_after_it_started,
            contract::one_watch_of_many_mailboxes_wakes_for_mail_to_each,
            waiting::wait_returns_what_arrived_at_once,
            waiting::wait_times_out_at_its_deadline,
            waiting::wait_and_watch_stop_soon_when_cancelled,
            waiting::watch_hands_over_each_message_once_until_told_to_stop,
            contract::claim_key_returns_the_first_claimant,
            contract::claim_origin_names_the_first_path,
            contract::revisions_list_what_edits_kept_and_keep_revision_adds_each_once,
            contract::set_archived_at_sets_what_recently_archived_reports,
            contract::listings_are_oldest_first_and_everything_spans_states,
            contract::find_matches_prefixes_case_insensitively,
            channels::broadcast_is_shown_once_to_each_member_and_never_to_its_sender,
            channels::a_re_import_finishes_what_an_interrupted_import_left,
            channels::peek_shows_unseen_broadcasts_without_marking_them,
            channels::inbox_limit_counts_broadcasts_and_leaves_them_unseen,
            channels::a_late_joiner_gets_the_standing_broadcasts_but_not_retracted_ones,
            channels::retract_unsends_for_those_who_have_not_seen_it,
            channels::retract_of_what_is_not_ones_own_standing_broadcast_is_refused,
            channels::channel_read_shows_the_unseen_once_and_show_shows_everything,
            channels::channel_read_with_a_limit_leaves_the_rest_for_the_next_read,
            channels::channel_list_counts_entries_and_what_the_reader_has_not_seen,
            channels::entries_appended_out_of_time_order_are_each_shown_once,
            channels::channel_entries_are_never_edited_or_cancelled_by_their_sender,
            channels::edit_or_cancel_of_anothers_channel_entry_is_refused_not_unknown,
            channels::done_of_a_channel_entry_is_refused,
            channels::a_hold_request_sent_or_posted_reaches_human_and_comes_first,
            channels::humans_answer_to_a_hold_request_reaches_the_requester_and_closes_it,
            channels::another_agents_answer_to_a_hold_request_leaves_humans_copy_open,
            channels::search_finds_broadcasts_and_channel_entries,
            channels::export_then_import_into_the_same_channel_duplicates_nothing,
            channels::importing_a_mailbox_md_twice_duplicates_nothing,
            channels::store_channel_contract_appends_once_and_marks_seen_once,
            hooks::change_token_is_equal_while_nothing_arrives,
            hooks::change_token_changes_when_directed_mail_arrives_for_that_mailbox_only,
            hooks::change_token_changes_when_a_broadcast_of_the_project_arrives,
            hooks::last_injected_is_absent_at_first_and_round_trips_per_mailbox,
            hooks::session_start_injects_pending_mail_and_later_hooks_only_what_is_new,
            hooks::session_start_shows_directed_mail_and_stop_asks_to_handle_it,
            reservations::an_exclusive_lease_refuses_an_overlapping_one_naming_the_holder,
            reservations::shared_leases_do_not_conflict_with_each_other,
            reservations::reserving_again_renews_the_own_lease,
            reservations::an_expired_lease_never_blocks,
            reservations::check_names_the_lease_covering_a_path,
            reservations::release_of_anothers_lease_is_refused_but_human_may,
            reservations::release_by_an_empty_id_releases_nothing,
            reservations::release_by_pattern_and_all_drop_only_the_callers,
            reservations::bad_reservations_are_invalid_and_change_nothing,
            reservations::two_agents_racing_for_one_pattern_exactly_one_gets_it,
            tokens::a_token_is_kept_as_a_hash_and_found_by_its_secret,
            tokens::a_revoked_token_stops_authenticating_at_once,
            tokens::an_expired_token_no_longer_authenticates,
            tokens::only_the_operator_manages_tokens_and_names_are_unique,
        }
    };
    (@go stamp ($with:path) $($module:ident :: $case:ident,)*) => {
        $(
            #[test]
            fn $case() {
                $with($crate::$module::$case);
            }
        )*
    };
    (@go list () $($module:ident :: $case:ident,)*) => {
        vec![$((stringify!($case), $crate::$module::$case as $crate::Case)),*]
    };
}

#[cfg(test)]
mod tests {
    #[test]
    fn case_names_are_unique() {
        let mut names: Vec<&str> = super::all().into_iter().map(|(n, _)| n).collect();
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count, "two cases share a name");
    }

    /// The list behind [`super::all`] and `store_tests!` is written by hand, so a case added to a
    /// module and not to the list would silently never run. Every `pub fn` of a case module
    /// (all but `kit` and this file) is a case: each must be listed, under its own module.
    #[test]
    fn every_public_function_of_a_case_module_is_listed() {
        let listed: std::collections::BTreeSet<String> = super::all()
            .into_iter()
            .map(|(name, _)| name.to_owned())
            .collect();
        let lib = include_str!("lib.rs");
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut missing = Vec::new();
        let mut seen = 0;
        for entry in std::fs::read_dir(&src).unwrap() {
            let path = entry.unwrap().path();
            let module = path.file_stem().unwrap().to_str().unwrap().to_owned();
            if matches!(module.as_str(), "lib" | "kit") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for line in text.lines() {
                let Some(rest) = line.strip_prefix("pub fn ") else {
                    continue;
                };
                let name = rest.split(['(', '<']).next().unwrap_or(rest);
                seen += 1;
                if !listed.contains(name) || !lib.contains(&format!("{module}::{name},")) {
                    missing.push(format!("{module}::{name}"));
                }
            }
        }
        assert!(
            seen > 100,
            "the case modules were read: {seen} functions found"
        );
        assert!(
            missing.is_empty(),
            "cases missing from the list in lib.rs (add them to `__cases!`): {missing:?}"
        );
        assert_eq!(
            seen,
            listed.len(),
            "every listed case is a function of a case module"
        );
    }
}
