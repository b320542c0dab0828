SELECT "s"."id", "s"."tenant_id", "s"."user_id", "s"."agent_id", "s"."status", "s"."state", "s"."metadata", "s"."external_session_id", "s"."provider", "s"."focus_mpn", "s"."last_query", "s"."last_filters", "s"."query_history", "s"."last_results", "s"."turn_count", "s"."last_turn_number", "s"."total_input_tokens", "s"."total_output_tokens", "s"."total_cached_tokens", "s"."total_reasoning_tokens", "s"."total_cost_usd", "s"."total_calls", "s"."total_errors", "s"."unpriced_calls", "s"."total_duration_ms", "s"."budget_tokens", "s"."budget_usd", "s"."budget_exceeded_at", "s"."runaway_at", "s"."runaway_reason", "s"."runaway_detail", "s"."runaway_blocked", "s"."compact_max_turns", "s"."compact_max_tokens", "s"."compact_keep_last_turns", "s"."compact_context_share", "s"."model", "s"."rotate_after_tokens", "s"."previous_session_id", "s"."capture_prompts", "s"."context_policy", "s"."cart_link_generation", "s"."ttl_seconds", "s"."expires_at", "s"."created_at", "s"."updated_at", "s"."last_active_at", ARRAY(
    SELECT jsonb_build_object('mpn', c.mpn, 'quantity', c.quantity, 'note', c.note)::text
      FROM session_selection AS c WHERE c.session_id = s.id ORDER BY c.position
) AS cart_json, EXISTS (
    SELECT FROM "budget_reservation" AS r WHERE r.session_id = s.id
) AS reservations_held
  FROM chat_session AS s
 WHERE s.tenant_id = %s AND s.id = ANY(%s)
 ORDER BY s.id
   FOR NO KEY UPDATE OF s
