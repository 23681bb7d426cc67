-- Per-frame speech probability of Silero VAD v5 over the LibriVox frames (what
-- the test compares with a bare ONNX Runtime session; query.sql summarises).
--
--   tierflow run examples/vad/frames.sql
CREATE MODEL vad TASK 'voice-activity-detection'
  INPUTS (audio TENSOR(FLOAT, 576), sr BIGINT)
  OUTPUTS (speech_prob FLOAT)
  VARIANTS (silero_v5 FROM '../../.cache/models/silero-vad/1.0.3/silero_vad.onnx');

CREATE STREAM frames (id BIGINT, ts TIMESTAMP, audio TENSOR(FLOAT, 576), ref_speech BIGINT)
  FROM FILE 'data/speech.arrow'
  FORMAT ARROW;

SELECT f.id, f.ref_speech, v.speech_prob
FROM frames AS f
CROSS JOIN LATERAL vad(f.audio, 16000) AS v(speech_prob);
