-- The accuracy/cost trade-off of the VQA workflow (examples/vqa/query.sql) at
-- 40 requests/s: every plan that no other beats on both accuracy and cost,
-- as a table and a plot (`tierflow explain --format json` for the numbers).
--
--   tierflow explain examples/vqa/frontier.sql
EXPLAIN (FRONTIER)
SELECT img.request_id, a.vqa AS answer
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
WITH (THROUGHPUT >= 40 PER SECOND);
