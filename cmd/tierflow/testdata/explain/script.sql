-- A script: explain runs its CREATE statements first, then every query;
-- EXPLAIN's options pick the format and strategy of its own plan.
CREATE SINK answers TO STDOUT;

EXPLAIN (FORMAT JSON, STRATEGY exhaustive)
INSERT INTO answers
SELECT img.request_id, a.vqa
FROM (
    SELECT ReadImage.request_id, f.extract_image_feature
    FROM ReadImage
    CROSS JOIN LATERAL ExtractImageFeature(image) AS f(extract_image_feature)
  ) AS img
JOIN (
    SELECT ReadSpeech.request_id, s.speech_recognition
    FROM ReadSpeech
    CROSS JOIN LATERAL SpeechRecognition(speech) AS s(speech_recognition)
  ) AS q ON img.request_id = q.request_id
CROSS JOIN LATERAL VQA(img.extract_image_feature, q.speech_recognition) AS a(vqa)
WITH (ACCURACY >= 0.58, THROUGHPUT >= 20 PER SECOND);
