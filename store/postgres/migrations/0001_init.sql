CREATE TABLE runs (
    id        TEXT PRIMARY KEY,
    scenario  TEXT NOT NULL,
    version   TEXT NOT NULL DEFAULT '',
    run_case  TEXT NOT NULL DEFAULT '',
    status    TEXT NOT NULL,
    started   BIGINT NOT NULL, -- unix nanoseconds
    ended     BIGINT NOT NULL,
    labels    TEXT NOT NULL DEFAULT '{}',
    result    TEXT NOT NULL    -- the whole Result, JSON
);
CREATE INDEX runs_scenario_started ON runs (scenario, started);
CREATE INDEX runs_version ON runs (version);

CREATE TABLE kpis (
    run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    phase  TEXT NOT NULL,
    name   TEXT NOT NULL,
    labels TEXT NOT NULL DEFAULT '',
    value  DOUBLE PRECISION NOT NULL,
    unit   TEXT NOT NULL DEFAULT ''
);
CREATE INDEX kpis_run ON kpis (run_id);
CREATE INDEX kpis_name ON kpis (name, phase);
