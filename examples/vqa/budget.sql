-- The dual objective: the most accurate VQA plan (examples/vqa/query.sql)
-- that costs at most 9 per hour at 40 requests/s. EXPLAIN shows the budget
-- and what the plan leaves of it; below the cheapest plan (7.03 per hour)
-- the plan is infeasible and says what the cheapest costs.
--
--   tierflow explain examples/vqa/budget.sql
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
WITH (BUDGET <= 9 PER HOUR, THROUGHPUT >= 40 PER SECOND);
