// Versioned schema migrations for the SQLite store, kept in code so a binary and its schema
// always travel together. Append only: never edit a migration that has shipped.

export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

export const sqliteMigrations: readonly Migration[] = [
  {
    version: 1,
    name: 'registry',
    sql: `
      CREATE TABLE models (
        id           INTEGER PRIMARY KEY,
        name         TEXT NOT NULL UNIQUE,
        team         TEXT NOT NULL,
        description  TEXT NOT NULL DEFAULT '',
        created_at   TEXT NOT NULL,
        -- next version number to hand out; numbers are never reused, even after a delete
        next_version INTEGER NOT NULL DEFAULT 1
      );
      CREATE INDEX models_team ON models(team, name);

      CREATE TABLE model_versions (
        id                      INTEGER PRIMARY KEY,
        model_id                INTEGER NOT NULL REFERENCES models(id),
        version                 INTEGER NOT NULL,
        format                  TEXT NOT NULL,
        size_bytes              INTEGER NOT NULL,
        manifest_digest         TEXT NOT NULL,
        schema_json             TEXT,
        metadata_json           TEXT NOT NULL,
        tags_json               TEXT NOT NULL,
        format_info_json        TEXT NOT NULL,
        external_json           TEXT,
        signature_key_id        TEXT,
        signature               TEXT,
        lineage_run             TEXT,
        lineage_dataset_uri     TEXT,
        lineage_dataset_version TEXT,
        lineage_experiment      TEXT,
        created_at              TEXT NOT NULL,
        deleted_at              TEXT,
        UNIQUE (model_id, version)
      );
      CREATE INDEX versions_lineage_run ON model_versions(lineage_run);
      CREATE INDEX versions_lineage_dataset ON model_versions(lineage_dataset_uri, lineage_dataset_version);
      CREATE INDEX versions_lineage_experiment ON model_versions(lineage_experiment);

      CREATE TABLE version_files (
        version_id INTEGER NOT NULL REFERENCES model_versions(id) ON DELETE CASCADE,
        path       TEXT NOT NULL,
        size       INTEGER NOT NULL,
        sha256     TEXT NOT NULL,
        PRIMARY KEY (version_id, path)
      );
      CREATE INDEX version_files_sha256 ON version_files(sha256);

      CREATE TABLE aliases (
        model_id   INTEGER NOT NULL REFERENCES models(id),
        alias      TEXT NOT NULL,
        version_id INTEGER NOT NULL REFERENCES model_versions(id),
        updated_at TEXT NOT NULL,
        PRIMARY KEY (model_id, alias)
      );
      CREATE INDEX aliases_version ON aliases(version_id);

      CREATE TABLE trusted_keys (
        key_id     TEXT PRIMARY KEY,
        name       TEXT NOT NULL,
        team       TEXT,
        public_key TEXT NOT NULL,
        created_at TEXT NOT NULL
      );

      -- scope '*' is the global setting; any other scope is a team name
      CREATE TABLE signing_policy (
        scope             TEXT PRIMARY KEY,
        require_signature INTEGER NOT NULL
      );
    `,
  },
  {
    version: 2,
    name: 'endpoints-and-api-keys',
    sql: `
      CREATE TABLE endpoints (
        name        TEXT PRIMARY KEY,
        team        TEXT NOT NULL,
        model_id    INTEGER NOT NULL REFERENCES models(id),
        version_id  INTEGER NOT NULL REFERENCES model_versions(id),
        -- what the user asked for: "3" or "@champion" (resolved into version_id at deploy)
        ref         TEXT NOT NULL,
        replicas    INTEGER NOT NULL,
        config_json TEXT NOT NULL,
        created_at  TEXT NOT NULL,
        updated_at  TEXT NOT NULL
      );
      CREATE INDEX endpoints_version ON endpoints(version_id);

      CREATE TABLE api_keys (
        id          TEXT PRIMARY KEY,
        name        TEXT NOT NULL,
        sha256      TEXT NOT NULL UNIQUE,
        prefix      TEXT NOT NULL,
        team        TEXT,
        endpoint    TEXT,
        created_at  TEXT NOT NULL,
        revoked_at  TEXT,
        CHECK ((team IS NULL) <> (endpoint IS NULL))
      );
    `,
  },
  {
    version: 3,
    name: 'team-limits',
    sql: `
      -- per-team token bucket at each gateway: requests_per_second sustained, burst at once
      CREATE TABLE team_limits (
        team                TEXT PRIMARY KEY,
        requests_per_second REAL NOT NULL CHECK (requests_per_second > 0),
        burst               INTEGER NOT NULL CHECK (burst >= 1),
        updated_at          TEXT NOT NULL
      );
    `,
  },
  {
    version: 4,
    name: 'control-tokens-and-audit',
    sql: `
      -- bearer tokens of the control-plane API; only the sha256 of a token is kept
      CREATE TABLE control_tokens (
        id          TEXT PRIMARY KEY,
        name        TEXT NOT NULL,
        role        TEXT NOT NULL CHECK (role IN ('admin', 'deployer', 'reader', 'gateway')),
        team        TEXT,
        prefix      TEXT NOT NULL,
        sha256      TEXT NOT NULL UNIQUE,
        created_at  TEXT NOT NULL,
        expires_at  TEXT,
        revoked_at  TEXT,
        CHECK ((role = 'deployer') = (team IS NOT NULL))
      );

      -- every mutating API call, allowed or refused; append-only
      CREATE TABLE audit_log (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        at          TEXT NOT NULL,
        token_id    TEXT,
        token_name  TEXT,
        role        TEXT,
        method      TEXT NOT NULL,
        route       TEXT NOT NULL,
        target      TEXT NOT NULL,
        status      INTEGER NOT NULL,
        code        TEXT
      );
      CREATE INDEX audit_log_at ON audit_log(at);
    `,
  },
  {
    version: 5,
    name: 'traffic-management',
    sql: `
      -- per endpoint: the split in force and what rollback needs; goes with its endpoint
      CREATE TABLE endpoint_traffic (
        endpoint      TEXT PRIMARY KEY REFERENCES endpoints(name) ON DELETE CASCADE,
        policy_json   TEXT,           -- TrafficPolicy; NULL: the stable version takes all
        previous_json TEXT,           -- VersionRef a rollback returns to
        warm_json     TEXT NOT NULL,  -- WarmVersion[]
        staged_json   TEXT NOT NULL,  -- VersionRef[]
        revision      INTEGER NOT NULL CHECK (revision >= 1),
        updated_at    TEXT NOT NULL
      );

      -- history of every traffic change; append-only, kept after the endpoint is deleted
      CREATE TABLE traffic_events (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        endpoint    TEXT NOT NULL,
        at          TEXT NOT NULL,
        actor       TEXT NOT NULL,
        action      TEXT NOT NULL,
        reason      TEXT NOT NULL,
        detail_json TEXT NOT NULL
      );
      CREATE INDEX traffic_events_endpoint ON traffic_events(endpoint, id);

      CREATE TABLE rollouts (
        id                 TEXT PRIMARY KEY,
        endpoint           TEXT NOT NULL,
        strategy           TEXT NOT NULL CHECK (strategy IN ('canary', 'blue-green')),
        baseline_model     TEXT NOT NULL,
        baseline_version   INTEGER NOT NULL,
        canary_model       TEXT NOT NULL,
        canary_version     INTEGER NOT NULL,
        steps_json         TEXT NOT NULL,
        step_index         INTEGER NOT NULL,
        interval_ms        INTEGER NOT NULL,
        thresholds_json    TEXT NOT NULL,
        slice_key          TEXT,
        slice_path         TEXT,
        state              TEXT NOT NULL CHECK (state IN
          ('starting', 'running', 'paused', 'succeeded', 'rolled-back', 'aborted')),
        step_started_at    TEXT,
        paused_at          TEXT,
        reason             TEXT,
        last_analysis_json TEXT NOT NULL,
        created_by         TEXT NOT NULL,
        created_at         TEXT NOT NULL,
        updated_at         TEXT NOT NULL,
        finished_at        TEXT
      );
      -- at most one active rollout per endpoint, whichever process writes
      CREATE UNIQUE INDEX rollouts_one_active ON rollouts(endpoint)
        WHERE state IN ('starting', 'running', 'paused');
      CREATE INDEX rollouts_endpoint ON rollouts(endpoint, created_at);

      CREATE TABLE experiments (
        id            TEXT PRIMARY KEY,
        endpoint      TEXT NOT NULL,
        name          TEXT NOT NULL,
        variants_json TEXT NOT NULL,
        salt          TEXT NOT NULL,
        key_path      TEXT,
        state         TEXT NOT NULL CHECK (state IN ('running', 'stopped')),
        created_by    TEXT NOT NULL,
        created_at    TEXT NOT NULL,
        stopped_at    TEXT
      );
      -- at most one running experiment per endpoint
      CREATE UNIQUE INDEX experiments_one_running ON experiments(endpoint)
        WHERE state = 'running';
      CREATE INDEX experiments_endpoint ON experiments(endpoint, created_at);

      -- caller-reported outcomes, merged per (variant, metric); a metric keeps its kind
      CREATE TABLE experiment_outcomes (
        experiment_id TEXT NOT NULL REFERENCES experiments(id),
        variant       TEXT NOT NULL,
        metric        TEXT NOT NULL,
        kind          TEXT NOT NULL CHECK (kind IN ('rate', 'mean')),
        moments_json  TEXT NOT NULL,
        updated_at    TEXT NOT NULL,
        PRIMARY KEY (experiment_id, variant, metric)
      );

      -- gateway reports merged into 10 s buckets (bucket_ms: epoch ms, a multiple of 10 000)
      CREATE TABLE traffic_observations (
        endpoint  TEXT NOT NULL,
        bucket_ms INTEGER NOT NULL,
        kind      TEXT NOT NULL CHECK (kind IN ('primary', 'shadow')),
        model     TEXT NOT NULL,
        version   INTEGER NOT NULL,
        slice     TEXT NOT NULL,
        data_json TEXT NOT NULL,
        PRIMARY KEY (endpoint, bucket_ms, kind, model, version, slice)
      );
      CREATE INDEX traffic_observations_bucket ON traffic_observations(bucket_ms);

      CREATE TABLE golden_sets (
        version_id     INTEGER PRIMARY KEY REFERENCES model_versions(id),
        tolerance_json TEXT NOT NULL,
        cases_json     TEXT NOT NULL,
        created_at     TEXT NOT NULL
      );
    `,
  },
  {
    version: 6,
    name: 'autoscaling-and-pools',
    sql: `
      -- per autoscaled endpoint: the count the reconciler runs now (0 allowed); goes with it
      CREATE TABLE endpoint_scale (
        endpoint       TEXT PRIMARY KEY REFERENCES endpoints(name) ON DELETE CASCADE,
        replicas       INTEGER NOT NULL CHECK (replicas >= 0),
        reason         TEXT NOT NULL,
        last_demand_at TEXT,
        updated_at     TEXT NOT NULL
      );

      -- history of every scale change; append-only, kept after the endpoint is deleted
      CREATE TABLE scale_events (
        id            INTEGER PRIMARY KEY AUTOINCREMENT,
        endpoint      TEXT NOT NULL,
        at            TEXT NOT NULL,
        kind          TEXT NOT NULL CHECK (kind IN
          ('scale-up', 'scale-down', 'to-zero', 'wake', 'manual')),
        from_replicas INTEGER NOT NULL,
        to_replicas   INTEGER NOT NULL,
        mode          TEXT NOT NULL,
        reason        TEXT NOT NULL
      );
      CREATE INDEX scale_events_endpoint ON scale_events(endpoint, id);

      -- gateway demand per endpoint and minute (minute_ms: epoch ms, a multiple of 60 000),
      -- summed over gateways; what the predictive scaler learns from. Kept after a delete.
      CREATE TABLE demand_history (
        endpoint            TEXT NOT NULL,
        minute_ms           INTEGER NOT NULL,
        arrivals            INTEGER NOT NULL CHECK (arrivals >= 0),
        concurrency_seconds REAL NOT NULL CHECK (concurrency_seconds >= 0),
        seconds             REAL NOT NULL CHECK (seconds >= 0),
        latency_json        TEXT NOT NULL,  -- HistogramSketchSnapshot of 200 answers, ms
        PRIMARY KEY (endpoint, minute_ms)
      );
      CREATE INDEX demand_history_minute ON demand_history(minute_ms);

      -- shared worker pools (kiln pools create); endpoints name theirs in config_json.pool
      CREATE TABLE pools (
        name                TEXT PRIMARY KEY,
        team                TEXT NOT NULL,
        workers             INTEGER NOT NULL CHECK (workers >= 1),
        memory_budget_bytes INTEGER NOT NULL CHECK (memory_budget_bytes > 0),
        created_at          TEXT NOT NULL,
        updated_at          TEXT NOT NULL
      );
    `,
  },
  {
    version: 7,
    name: 'reference-profiles',
    // Issue 15, B: the reference profile of a version (training-data sketches), one per version.
    sql: `
      CREATE TABLE version_profiles (
        version_id   INTEGER PRIMARY KEY REFERENCES model_versions(id),
        profile_json TEXT NOT NULL,  -- DataProfile (src/observability/profile/data-profile.ts)
        stored_at    TEXT NOT NULL
      );
    `,
  },
  {
    version: 8,
    name: 'drift-windows',
    // Issue 15, C: merged drift sketches per endpoint, version, window and slice.
    sql: `
      -- the workers' sketches (DataProfile JSON) merged per endpoint, version, window (start
      -- in epoch ms, a multiple of window_ms) and slice ('' = overall); kept after a delete,
      -- pruned by age
      CREATE TABLE drift_windows (
        endpoint        TEXT NOT NULL,
        model           TEXT NOT NULL,
        version         INTEGER NOT NULL,
        window_start_ms INTEGER NOT NULL,
        window_ms       INTEGER NOT NULL CHECK (window_ms > 0),
        slice           TEXT NOT NULL,
        rows            INTEGER NOT NULL CHECK (rows >= 0),
        profile_json    TEXT NOT NULL,
        updated_at      TEXT NOT NULL,
        PRIMARY KEY (endpoint, model, version, window_start_ms, slice)
      );
      CREATE INDEX drift_windows_start ON drift_windows(window_start_ms);
    `,
  },
  {
    version: 9,
    name: 'predictions-and-outcomes',
    // Issue 15, D: predictions awaiting outcomes, joined outcomes (sqlite-quality.ts).
    sql: `
      CREATE TABLE predictions (
        endpoint     TEXT NOT NULL,
        request_id   TEXT NOT NULL,
        model        TEXT NOT NULL,
        version      INTEGER NOT NULL,
        -- the answer's score (classification) or value (regression)
        prediction   REAL NOT NULL,
        slice        TEXT,
        -- epoch ms the request arrived at the gateway
        at_ms        INTEGER NOT NULL,
        outcome      REAL,
        joined_at_ms INTEGER,
        PRIMARY KEY (endpoint, request_id)
      );
      CREATE INDEX predictions_time ON predictions(endpoint, at_ms);
    `,
  },
  {
    version: 10,
    name: 'cost-usage',
    // Issue 15, E: usage cost reports charge (src/store/cost-records.ts). Requests are read
    // from demand_history; prices are applied when a report is built, never stored.
    sql: `
      -- replica time per endpoint, team, hour (hour_ms: epoch ms, a multiple of 3 600 000)
      -- and instance shape (accelerator_type '' for none); samples of one key add up.
      CREATE TABLE cost_usage (
        endpoint          TEXT NOT NULL,
        team              TEXT NOT NULL,
        hour_ms           INTEGER NOT NULL,
        cpu               REAL NOT NULL CHECK (cpu >= 0),
        memory_gib        REAL NOT NULL CHECK (memory_gib >= 0),
        accelerator_type  TEXT NOT NULL,
        accelerators      REAL NOT NULL CHECK (accelerators >= 0),
        capacity          TEXT NOT NULL CHECK (capacity IN ('spot', 'on-demand')),
        replica_seconds   REAL NOT NULL CHECK (replica_seconds >= 0),
        observed_seconds  REAL NOT NULL CHECK (observed_seconds >= 0),
        cpu_busy_seconds  REAL NOT NULL CHECK (cpu_busy_seconds >= 0),
        PRIMARY KEY (endpoint, team, hour_ms, cpu, memory_gib, accelerator_type, accelerators, capacity)
      );
      CREATE INDEX cost_usage_hour ON cost_usage(hour_ms);

      -- LLM tokens answered per endpoint, team and hour (gateway reports)
      CREATE TABLE cost_tokens (
        endpoint          TEXT NOT NULL,
        team              TEXT NOT NULL,
        hour_ms           INTEGER NOT NULL,
        prompt_tokens     INTEGER NOT NULL CHECK (prompt_tokens >= 0),
        completion_tokens INTEGER NOT NULL CHECK (completion_tokens >= 0),
        PRIMARY KEY (endpoint, team, hour_ms)
      );
      CREATE INDEX cost_tokens_hour ON cost_tokens(hour_ms);
    `,
  },
  {
    version: 11,
    name: 'slo-alerts',
    // Issue 15, F (docs/slo.md): SLI counts per endpoint and minute (what burn rates are
    // computed from), each alert's current state and the history of its transitions. Kept
    // after an endpoint's delete (history); SLI minutes are pruned after the budget period.
    sql: `
      CREATE TABLE slo_minutes (
        endpoint        TEXT NOT NULL,
        minute_ms       INTEGER NOT NULL,  -- epoch ms, a multiple of 60 000
        requests        INTEGER NOT NULL CHECK (requests >= 0),
        server_errors   INTEGER NOT NULL CHECK (server_errors >= 0),
        latency_total   INTEGER NOT NULL CHECK (latency_total >= 0),
        latency_good    INTEGER NOT NULL CHECK (latency_good >= 0),
        PRIMARY KEY (endpoint, minute_ms)
      );
      CREATE INDEX slo_minutes_minute ON slo_minutes(minute_ms);

      CREATE TABLE slo_alerts (
        endpoint     TEXT NOT NULL,
        alert        TEXT NOT NULL,
        severity     TEXT NOT NULL,
        state        TEXT NOT NULL CHECK (state IN ('firing', 'resolved')),
        since        TEXT NOT NULL,
        summary      TEXT NOT NULL,
        detail_json  TEXT NOT NULL,
        updated_at   TEXT NOT NULL,
        PRIMARY KEY (endpoint, alert)
      );

      CREATE TABLE slo_alert_events (
        id           INTEGER PRIMARY KEY AUTOINCREMENT,
        endpoint     TEXT NOT NULL,
        alert        TEXT NOT NULL,
        severity     TEXT NOT NULL,
        state        TEXT NOT NULL CHECK (state IN ('firing', 'resolved')),
        at           TEXT NOT NULL,
        summary      TEXT NOT NULL,
        detail_json  TEXT NOT NULL
      );
      CREATE INDEX slo_alert_events_endpoint ON slo_alert_events(endpoint, id);
    `,
  },
  {
    version: 12,
    name: 'leader-lease',
    // Issue 17: several control planes on one PostgreSQL, one of them leading. `leases` holds
    // the controllers' lease (src/control/leader/): its holder, the epoch that fences every
    // write the leader's controllers make (PgDatabase checks it under the write lock) and its
    // expiry in the DATABASE's clock (epoch ms), never a control plane's own.
    // `routing_snapshots` is the routing snapshot the leader publishes, stamped with the epoch
    // it was published under, so every control plane (followers included) serves gateways the
    // leader's routing. On SQLite both stay empty: one control plane per home leads by holding
    // the home lock.
    sql: `
      CREATE TABLE leases (
        name           TEXT PRIMARY KEY,
        holder         TEXT NOT NULL,
        epoch          INTEGER NOT NULL,
        expires_at_ms  INTEGER NOT NULL,
        renewed_at     TEXT NOT NULL
      );

      CREATE TABLE routing_snapshots (
        name           TEXT PRIMARY KEY,
        version        INTEGER NOT NULL,
        holder         TEXT NOT NULL,
        epoch          INTEGER NOT NULL,
        snapshot_json  TEXT NOT NULL,
        published_at   TEXT NOT NULL
      );
    `,
  },
];
