-- Visual question answering (JellyBean Figure 1), runnable: the workflow of
-- examples/vqa on small ONNX models over real images (Fashion-MNIST) and real
-- speech (LibriVox), 1,152 requests at 40 a second of event time.
--
--   ReadImage  -> ExtractImageFeature --\
--                                        VQA -> answers
--   ReadSpeech -> SpeechRecognition ----/
--
-- Each request has an image and a speech window with the same request_id and
-- event time; the two feature streams meet in a windowed join (its state is
-- forgotten per window; equal ids fall in the same 1-second window), and the
-- two-input VQA model answers from both features.
--
-- Plan it (catalog.yaml and infra.yaml sit next to this file):
--   tierflow explain examples/vqa-live/query.sql
-- Run it on an embedded cluster of infra.yaml's edge, hub and cloud workers
-- (the optimizer's variants and placement; features cross NATS between tiers):
--   tierflow run --catalog examples/vqa-live/catalog.yaml --infra examples/vqa-live/infra.yaml examples/vqa-live/query.sql
-- Or in one process (each model's most accurate variant: the same answers):
--   tierflow run --local --catalog examples/vqa-live/catalog.yaml examples/vqa-live/query.sql
SELECT img.request_id, a.answer, round(a.score, 3) AS score
FROM (
  SELECT ReadImage.request_id, ReadImage.ts, f.feature
  FROM ReadImage
  CROSS JOIN LATERAL ExtractImageFeature(image) AS f(feature)
) AS img
JOIN (
  SELECT ReadSpeech.request_id, ReadSpeech.ts, s.speech_feature
  FROM ReadSpeech
  CROSS JOIN LATERAL SpeechRecognition(speech) AS s(speech_feature)
) AS q ON img.request_id = q.request_id AND TUMBLE(img.ts, INTERVAL '1' SECOND) = TUMBLE(q.ts, INTERVAL '1' SECOND)
CROSS JOIN LATERAL VQA(img.feature, q.speech_feature) AS a(answer, score)
WITH (ACCURACY >= 58, THROUGHPUT >= 40 PER SECOND);
